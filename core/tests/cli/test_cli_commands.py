"""The torchenv CLI through main(argv): output, exit codes, failing backends."""

from __future__ import annotations

import pytest

from torchenv.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_backends_table_reports_every_status_and_fits(site, capsys):
    site.simulator("tev-cli-sim", "1.0")
    site.plugin("tevcliok", simulator="tev-cli-sim", supported=">=1")
    site.plugin("tevclimissing", simulator="tev-cli-absent", install='pip install "torchenv[x]"')
    site.simulator("tev-cli-old", "0.1")
    site.plugin("tevcliold", simulator="tev-cli-old", supported=">=0.5")
    site.dist(
        "torchenv-" + "very-long-distribution-name" * 3,
        "12.34.56.dev789",
        entry_points={"tevclibroken": "tev_cli_broken"},
        modules={"tev_cli_broken": "raise ImportError('cannot import this plugin' * 9)"},
    )
    code, out, err = _run(capsys, "backends")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["BACKEND", "PLUGIN", "SIMULATOR", "SUPPORTED", "STATUS"]
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    row = {line.split()[0]: line for line in lines[1:] if line and line[0] != " "}
    assert row["tevcliok"].endswith("ok") and "tev-cli-sim 1.0" in row["tevcliok"]
    assert row["tevclimissing"].endswith("simulator missing")
    assert row["tevcliold"].endswith("unsupported version")
    assert row["tevclibroken"].endswith("failed to load")
    assert 'tevclimissing: tev-cli-absent is not installed. pip install "torchenv[x]"' in out
    assert "tevcliold: tev-cli-old 0.1 is installed" in out


def test_backends_mentions_disabled_plugins(site, capsys, monkeypatch):
    monkeypatch.setenv("TORCHENV_DISABLE_PLUGINS", "tevcliskip")
    site.plugin("tevcliskip")
    code, out, _ = _run(capsys, "backends")
    assert code == 0
    assert "disabled by TORCHENV_DISABLE_PLUGINS: tevcliskip" in out
    assert "\ntevcliskip " not in out


def test_list_groups_envs_and_survives_a_failing_backend(site, capsys):
    site.plugin("tevlista", envs=("One-v0", "Two-v0"))
    site.dist(
        "tev-crash-sim", "1.0", modules={"tev_crash_sim": "raise RuntimeError('sim exploded')"}
    )
    site.plugin("tevlistcrash", simulator="tev-crash-sim", sim_module="tev_crash_sim")
    site.plugin("tevlistmissing", simulator="tev-not-installed-sim")
    code, out, _ = _run(capsys, "list")
    assert code == 0
    assert "tevlista (2 envs)\n  One-v0  Two-v0" in out
    assert "tevlistcrash: cannot list envs: RuntimeError: sim exploded" in out
    assert "tevlistmissing: unavailable (simulator missing)" in out


def test_list_one_backend(site, capsys):
    site.plugin("tevlistone", envs=[f"Env{i:02d}-v0" for i in range(40)])
    code, out, _ = _run(capsys, "list", "tevlistone")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "tevlistone (40 envs)"
    assert all(len(line) <= 100 for line in lines) and len(lines) > 2
    assert " ".join(lines[1:]).split() == [f"Env{i:02d}-v0" for i in range(40)]


def test_errors_are_one_line_with_exit_code_2(site, capsys):
    site.plugin("tevclierr")
    code, out, err = _run(capsys, "list", "tevclierrr")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        "torchenv: error: unknown backend 'tevclierrr'. Did you mean 'tevclierr'?"
    )


def test_debug_shows_the_traceback(capsys):
    code, _, err = _run(capsys, "list", "tev-no-such-backend", "--debug")
    assert code == 2
    assert "Traceback" in err and "UnknownBackendError" in err


def test_usage_errors(capsys):
    assert (
        _run(
            capsys,
        )[0]
        == 2
    )
    code, _, err = _run(capsys, "frobnicate")
    assert code == 2 and "invalid choice" in err
    code, _, err = _run(capsys, "rollout", "builtin:Pendulum", "--kwargs", "novalue")
    assert code == 2 and "expected key=value" in err
    code, _, err = _run(capsys, "rollout", "builtin:Pendulum", "--steps", "0")
    assert code == 2 and "argument --steps: must be at least 1, got 0" in err


def test_version_and_help(capsys):
    code, out, _ = _run(capsys, "--version")
    assert code == 0 and out.startswith("torchenv ")
    code, out, _ = _run(capsys, "--help")
    assert code == 0
    for command in ("backends", "list", "info", "check", "rollout"):
        assert command in out


def test_kwargs_reach_make(site, capsys):
    # the fake env is not an EnvBase: info fails after make, with a one-line error naming it
    site.plugin("tevclikw")
    code, _, err = _run(capsys, "info", "tevclikw:Alpha-v0", "--kwargs", "n=3", "mode=fast")
    assert code == 2 and "AttributeError" in err and "FakeEnv" in err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("n=3", ("n", 3)),
        ("device=cpu", ("device", "cpu")),
        ("shape=[2, 3]", ("shape", [2, 3])),
        ("flag=True", ("flag", True)),
        ("name='x=y'", ("name", "x=y")),
    ],
)
def test_parse_kwarg(text, expected):
    from torchenv.cli._commands import parse_kwarg

    assert parse_kwarg(text) == expected
