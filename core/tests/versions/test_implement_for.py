"""implement_for: dispatch on real (throw-away) installed distributions."""

from __future__ import annotations

import pickle
import sys
import types

import pytest
from packaging.version import Version

from torchenv.versions import (
    DistributionNotInstalledError,
    UnsupportedVersionError,
    VersionDispatcher,
    implement_for,
    installed_version,
)


def test_function_dispatch_follows_installed_version(install_dist):
    install_dist("tev-sim", "0.26.2")

    @implement_for("tev-sim", None, "0.26.0")
    def fun():
        return 0

    @implement_for("tev-sim", "0.26.0", None)
    def fun():  # noqa: F811
        return 1

    assert isinstance(fun, VersionDispatcher)
    assert fun() == 1
    assert fun.__name__ == "fun"


def test_choice_is_cached_until_reset(install_dist):
    install_dist("tev-sim", "1.5")

    @implement_for("tev-sim", None, "2")
    def fun():
        return "v1"

    @implement_for("tev-sim", "2", None)
    def fun():  # noqa: F811
        return "v2"

    assert fun() == "v1"
    install_dist("tev-sim", "2.0.1", reset=False)  # shadows the first install
    assert fun() == "v1"  # the choice is cached
    implement_for.reset()
    assert fun() == "v2"


def test_resolution_is_lazy_and_does_not_import(install_dist):
    # The import name differs from the distribution name; importing the module would fail.
    install_dist("tev-lazy-dist", "3.1", modules={"tev_lazy_mod": "raise RuntimeError('imported')"})

    @implement_for("tev_lazy_mod", "3.0", "4.0")
    def fun():
        return "three"

    assert fun() == "three"
    assert "tev_lazy_mod" not in sys.modules
    assert installed_version("tev_lazy_mod") == Version("3.1")


@pytest.mark.parametrize(
    ("installed", "expected"),
    [("0.1", "low"), ("0.99", "low"), ("1.0", "high"), ("7.3.2", "high")],
)
def test_open_ended_ranges(install_dist, installed, expected):
    install_dist("tev-open", installed)

    @implement_for("tev-open", None, "1.0")
    def fun():
        return "low"

    @implement_for("tev-open", "1.0")
    def fun():  # noqa: F811
        return "high"

    assert fun() == expected


def test_fully_open_range_matches_any_version(install_dist):
    install_dist("tev-any", "0.0.1.dev3")

    @implement_for("tev-any")
    def fun():
        return "any"

    assert fun() == "any"


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        ("1.0.0rc1", "before"),  # a pre-release sorts before its release
        ("1.0.0a1", "before"),
        ("1.0.0.dev7", "before"),
        ("1.0.0", "one"),
        ("1.0.post1", "one"),  # a post-release sorts after it
        ("1.0.0+cpu", "one"),  # local versions too
        ("1.1.0rc2", "one"),
        ("1.1.0", "after"),
    ],
)
def test_pre_and_post_releases_follow_pep440(install_dist, installed, expected):
    install_dist("tev-pep", installed)

    @implement_for("tev-pep", None, "1.0")
    def fun():
        return "before"

    @implement_for("tev-pep", "1.0", "1.1")
    def fun():  # noqa: F811
        return "one"

    @implement_for("tev-pep", "1.1")
    def fun():  # noqa: F811
        return "after"

    assert fun() == expected


def test_missing_distribution_error_says_not_installed():
    @implement_for("tev-surely-missing", "1.0")
    def fun():
        return 1

    with pytest.raises(DistributionNotInstalledError) as info:
        fun()
    assert isinstance(info.value, ModuleNotFoundError)
    message = str(info.value)
    assert "tev-surely-missing" in message and "not installed" in message
    assert info.value.distribution == "tev-surely-missing"


def test_no_matching_range_names_version_and_ranges(install_dist):
    install_dist("tev-gap", "0.25.1")

    @implement_for("tev-gap", None, "0.21")
    def fun():
        return "old"

    @implement_for("tev-gap", "0.26", "1.0")
    def fun():  # noqa: F811
        return "new"

    with pytest.raises(UnsupportedVersionError) as info:
        fun()
    message = str(info.value)
    assert "tev-gap 0.25.1" in message
    assert "tev-gap <0.21" in message and "tev-gap >=0.26, <1.0" in message
    assert info.value.version == "0.25.1"
    assert info.value.supported == ("tev-gap <0.21", "tev-gap >=0.26, <1.0")


def test_method_dispatch_in_class_body(install_dist):
    install_dist("tev-meth", "2.3")

    class Env:
        def __init__(self, x):
            self.x = x

        @implement_for("tev-meth", None, "2.0")
        def scale(self, y):
            return self.x * y

        @implement_for("tev-meth", "2.0", None)
        def scale(self, y):  # noqa: F811
            return self.x + y

    class Child(Env):
        pass

    assert Env(3).scale(4) == 7
    assert Child(1).scale(1) == 2
    assert Env.scale(Env(2), 5) == 7  # unbound access works like a function


def test_class_method_dispatch(install_dist):
    install_dist("tev-cls", "0.9")

    class Maker:
        tag = "maker"

        @implement_for("tev-cls", "0.5", "1.0", class_method=True)
        def build(cls, n):
            return (cls.tag, n, "0.x")

        @implement_for("tev-cls", "1.0", None, class_method=True)
        def build(cls, n):  # noqa: F811
            return (cls.tag, n, "1.x")

        @implement_for("tev-cls", "0.5")
        @classmethod
        def other(cls):
            return cls.tag

    class Sub(Maker):
        tag = "sub"

    assert Maker.build(2) == ("maker", 2, "0.x")
    assert Sub.build(1) == ("sub", 1, "0.x")
    assert Sub().build(0) == ("sub", 0, "0.x")
    assert Maker.other() == "maker"


def test_class_method_flag_must_agree():
    @implement_for("tev-flag", "1.0", class_method=True)
    def fun(cls):
        return cls

    with pytest.raises(TypeError, match="class_method"):

        @implement_for("tev-flag", None, "1.0")
        def fun(cls):
            return cls


def test_register_api(install_dist):
    install_dist("tev-reg", "5.0")

    @implement_for("tev-reg", None, "5.0")
    def fun(x):
        return x

    @fun.register("5.0", "6.0")
    def _(x):
        return 10 * x

    assert fun(2) == 20
    assert fun.implementations == ("tev-reg <5.0", "tev-reg >=5.0, <6.0")


def test_last_fitting_wins_and_prefer_switches(install_dist):
    install_dist("tev-first", "1.0")
    install_dist("tev-second", "1.0")

    @implement_for("tev-first", "1.0")
    def fun():
        return "first"

    @implement_for("tev-second", "1.0")
    def fun():  # noqa: F811
        return "second"

    assert fun() == "second"
    with implement_for.prefer("tev-first"):
        assert fun() == "first"
    assert fun() == "second"


def test_other_library_fits_when_one_is_missing(install_dist):
    install_dist("tev-present", "0.3")

    @implement_for("tev-absent", "0.1")
    def fun():
        return "absent"

    @implement_for("tev-present", "0.1")
    def fun():  # noqa: F811
        return "present"

    assert fun() == "present"


def test_dispatch_on_core_dependencies():
    from importlib.metadata import version

    @implement_for("torch", None, "2.0")
    def which_torch():
        return "old"

    @implement_for("torch", "2.0", None)
    def which_torch():  # noqa: F811
        return "new"

    @implement_for("tensordict", "0.1")
    def which_td():
        return installed_version("tensordict")

    assert which_torch() == "new"
    assert which_td() == Version(version("tensordict"))
    assert installed_version("torch") == Version(version("torch"))


def test_callable_module_source():
    module = types.SimpleNamespace(__name__="tev_callable", __version__="4.2.0")

    @implement_for(lambda: module, "4.0", "5.0")
    def fun():
        return "four"

    assert fun() == "four"
    module.__version__ = "5.1"
    implement_for.reset()
    with pytest.raises(UnsupportedVersionError, match="tev_callable 5.1"):
        fun()


def test_bad_ranges_are_rejected_at_decoration():
    with pytest.raises(ValueError, match="empty range"):
        implement_for("tev-x", "2.0", "1.0")
    with pytest.raises(ValueError, match="not a PEP 440 version"):
        implement_for("tev-x", "one point oh")
    with pytest.raises(TypeError, match="module_name"):
        implement_for(3)


def test_check_version_is_half_open():
    assert implement_for.check_version("0.26", "0.26", "0.27")
    assert not implement_for.check_version("0.27", "0.26", "0.27")
    assert implement_for.check_version("2.13.0+cpu", "2.13", None)


def test_module_level_dispatcher_pickles_by_name():
    from torchenv.versions import _implement_for as module

    @implement_for("packaging", "1.0")
    def probe():
        return "ok"

    # a dispatcher pickles by reference; make this one reachable by name for the round trip
    probe._key = (module.__name__, "_probe_for_pickle")
    module._probe_for_pickle = probe
    try:
        assert pickle.loads(pickle.dumps(probe)) is probe
    finally:
        del module._probe_for_pickle


def test_each_definition_is_its_own_object_for_decorators_above_it():
    # TorchRL's tests put pytest.mark.parametrize above each @implement_for definition of one
    # name; on a single shared object the marks piled up ("duplicate parametrization")
    @pytest.mark.parametrize("order", ["old"])
    @implement_for("packaging", None, "1.0")
    def spec_cast(order):
        return "old"

    first = spec_cast

    @pytest.mark.parametrize("order", ["new"])
    @implement_for("packaging", "1.0")
    def spec_cast(order):
        return "new"

    assert [m.args for m in spec_cast.pytestmark] == [("order", ["new"])]
    assert [m.args for m in first.pytestmark] == [("order", ["old"])]
    assert first("x") == spec_cast("x") == "new"  # one name, one choice
    assert (
        first.implementations == spec_cast.implementations == ("packaging <1.0", "packaging >=1.0")
    )
