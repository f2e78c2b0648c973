"""The public names of torchrl.envs / torchrl.data (specs) / torchrl.record that torchenv covers.

The lists below were taken once from TorchRL 0.14.1 (``torchrl.envs.__all__``, ``torchrl.data``,
``torchrl.record.__all__``) and filtered by the scope of torchenv's issues 3-6: the spec family
(with the legacy ``*TensorSpec`` aliases of TorchRL < 0.14), ``EnvBase`` and its utilities, the
transform catalog, the batched envs, the recorders, and the gym wrappers (in the ``torchenv_gym``
plugin). A name that TorchRL code imports from ``torchrl.X`` must import from its torchenv
counterpart unchanged. Set ``TORCHENV_BENCH_TORCHRL_PYTHON`` to a python with TorchRL to also check
that the lists hold no name TorchRL lacks.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess

import pytest

import torchenv

# torchrl.data: the spec family (modern names)
SPECS = [
    "Binary",
    "Bounded",
    "BoundedContinuous",
    "Categorical",
    "Choice",
    "Composite",
    "MultiCategorical",
    "MultiOneHot",
    "NonTensor",
    "OneHot",
    "Stacked",
    "StackedComposite",
    "TensorSpec",
    "Unbounded",
    "UnboundedContinuous",
    "UnboundedDiscrete",
    "check_no_exclusive_keys",
    "consolidate_spec",
    "contains_lazy_spec",
]

# torchrl.data before 0.14: deprecated aliases that older TorchRL code still imports
LEGACY_SPECS = [
    "BinaryDiscreteTensorSpec",
    "BoundedTensorSpec",
    "CompositeSpec",
    "DiscreteTensorSpec",
    "LazyStackedCompositeSpec",
    "LazyStackedTensorSpec",
    "MultiDiscreteTensorSpec",
    "MultiOneHotDiscreteTensorSpec",
    "NonTensorSpec",
    "OneHotDiscreteTensorSpec",
    "UnboundedContinuousTensorSpec",
    "UnboundedDiscreteTensorSpec",
]

# torchrl.envs: EnvBase and the env utilities (torchrl.envs.utils)
ENVS = [
    "EnvBase",
    "EnvMetaData",
    "MarlGroupMapType",
    "PendulumEnv",
    "RandomPolicy",
    "TicTacToeEnv",
    "check_env_specs",
    "check_marl_grouping",
    "get_available_libraries",
    "make_composite_from_td",
    "step_mdp",
    "terminated_or_truncated",
]

# torchrl.envs (torchrl.envs.transforms): TransformedEnv, Compose and the catalog of issue 5
TRANSFORMS = [
    "ActionDiscretizer",
    "ActionMask",
    "AutoResetEnv",
    "AutoResetTransform",
    "BatchSizeTransform",
    "BinarizeReward",
    "CatFrames",
    "CatTensors",
    "CenterCrop",
    "ClipTransform",
    "Compose",
    "ConditionalSkip",
    "Crop",
    "DTypeCastTransform",
    "DeviceCastTransform",
    "DiscreteActionProjection",
    "DoubleToFloat",
    "EndOfLifeTransform",
    "ExcludeTransform",
    "FiniteTensorDictCheck",
    "FlattenObservation",
    "FrameSkipTransform",
    "GrayScale",
    "Hash",
    "InitTracker",
    "LineariseRewards",
    "MultiAction",
    "NoopResetEnv",
    "ObservationNorm",
    "ObservationTransform",
    "PermuteTransform",
    "RemoveEmptySpecs",
    "RenameTransform",
    "Resize",
    "Reward2GoTransform",
    "RewardClipping",
    "RewardScaling",
    "RewardSum",
    "SelectTransform",
    "SignTransform",
    "SqueezeTransform",
    "Stack",
    "StepCounter",
    "TargetReturn",
    "TensorDictPrimer",
    "TimeMaxPool",
    "Timer",
    "ToTensorImage",
    "TrajCounter",
    "Transform",
    "TransformedEnv",
    "UnaryTransform",
    "UnsqueezeTransform",
    "VecNorm",
    "VecNormV2",
    "gSDENoise",
]

# torchrl.envs: the batched envs
BATCHED = ["EnvCreator", "ParallelEnv", "SerialEnv"]

# torchrl.envs / torchrl.envs.libs.gym: the gym wrappers, in the torchenv_gym plugin
GYM = [
    "GymEnv",
    "GymWrapper",
    "default_info_dict_reader",
    "gym_backend",
    "register_gym_spec_conversion",
    "set_gym_backend",
]

# torchrl.record (and torchrl.record.loggers / torchrl.record.recorder)
RECORD = ["CSVLogger", "PixelRenderTransform", "TensorDictRecorder", "VideoRecorder"]
RECORD_LOGGERS = ["CSVLogger"]
RECORD_RECORDER = ["PixelRenderTransform", "TensorDictRecorder", "VideoRecorder"]

# torchrl module -> (its torchenv counterpart, the names above it must provide)
MODULE_MAP = {
    "torchrl.data": ("torchenv.specs", SPECS),
    "torchrl.envs": ("torchenv", [n for n in ENVS if n != "RandomPolicy"] + TRANSFORMS + BATCHED),
    "torchrl.envs.utils": (
        "torchenv.envs",
        [n for n in ENVS if n not in ("EnvBase", "EnvMetaData", "PendulumEnv", "TicTacToeEnv")],
    ),
    "torchrl.envs.transforms": ("torchenv.transforms", TRANSFORMS),
    "torchrl.envs.libs.gym": ("torchenv_gym", GYM),
    "torchrl._utils": ("torchenv.versions", ["implement_for"]),
    "torchrl.record": ("torchenv.record", RECORD),
    "torchrl.record.loggers": ("torchenv.record.loggers", RECORD_LOGGERS),
    "torchrl.record.recorder": ("torchenv.record.recorder", RECORD_RECORDER),
}


def _cases():
    for torchrl_module, (module, names) in MODULE_MAP.items():
        for name in names:
            yield pytest.param(module, name, id=f"{torchrl_module}.{name}")


@pytest.mark.parametrize(("module", "name"), list(_cases()))
def test_torchrl_name_imports_from_its_torchenv_counterpart(module, name):
    if module == "torchenv_gym":
        pytest.importorskip("gymnasium")
    namespace: dict = {}
    exec(f"from {module} import {name}", namespace)  # the import statement users write
    assert namespace[name] is not None


@pytest.mark.parametrize(
    ("layer", "names"),
    [
        ("torchenv.specs", SPECS + LEGACY_SPECS),
        ("torchenv.envs", ENVS),
        ("torchenv.transforms", TRANSFORMS),
        ("torchenv.batched", BATCHED),
        ("torchenv.record", RECORD),
    ],
)
def test_each_name_lives_in_its_layer_and_is_listed_there(layer, names):
    module = importlib.import_module(layer)
    for name in names:
        assert name in module.__all__, f"{layer}.__all__ lacks {name!r}"
        assert getattr(module, name) is not None


@pytest.mark.parametrize("name", SPECS + ENVS + TRANSFORMS + BATCHED + ["implement_for"])
def test_top_level_gives_the_same_object_as_the_layer(name):
    assert name in torchenv.__all__
    layer = importlib.import_module(torchenv._EXPORTS[name])
    assert getattr(torchenv, name) is getattr(layer, name)


def test_legacy_spec_aliases_behave_as_their_modern_names():
    from torchenv import specs

    spec = specs.CompositeSpec(obs=specs.UnboundedContinuousTensorSpec(shape=(3,)))
    assert isinstance(spec, specs.Composite)
    assert isinstance(spec["obs"], specs.Unbounded)
    assert spec.is_in(spec.rand())
    assert isinstance(specs.BoundedTensorSpec(-1, 1, shape=(2,)), specs.Bounded)
    assert isinstance(specs.DiscreteTensorSpec(3), specs.Categorical)
    assert isinstance(specs.OneHotDiscreteTensorSpec(3), specs.OneHot)


@pytest.mark.parametrize("name", sorted(torchenv._EXPORTS))
def test_every_top_level_export_resolves(name):
    assert getattr(torchenv, name) is not None
    assert name in dir(torchenv)


def test_top_level_all_is_exports_and_version():
    assert sorted(torchenv.__all__) == sorted([*torchenv._EXPORTS, "__version__"])
    assert isinstance(torchenv.__version__, str)
    with pytest.raises(AttributeError, match="NoSuchName"):
        torchenv.NoSuchName  # noqa: B018


def _public_modules(package) -> list[str]:
    names = [package.__name__]
    for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


LAYERS = _public_modules(torchenv)


def test_every_layer_is_listed():
    for layer in ("specs", "envs", "transforms", "batched", "record", "versions", "registry"):
        assert f"torchenv.{layer}" in LAYERS


@pytest.mark.parametrize("module_name", [*LAYERS, "torchenv_gym"])
def test_every_layer_all_resolves(module_name):
    if module_name == "torchenv_gym":
        pytest.importorskip("gymnasium")
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        pytest.skip(f"{module_name} has no __all__ (not a facade)")
    assert len(names) == len(set(names)), f"{module_name}.__all__ has duplicates"
    missing = [name for name in names if not hasattr(module, name)]
    assert not missing, f"{module_name}.__all__ names that do not resolve: {missing}"


_TORCHRL_PROBE = """
import importlib, json, sys, warnings
warnings.filterwarnings("ignore")
cases = json.loads(sys.argv[1])
missing = [f"{m}.{n}" for m, names in cases.items() for n in names
           if not hasattr(importlib.import_module(m), n)]
print(json.dumps(missing))
"""


@pytest.mark.torchrl
@pytest.mark.slow
def test_the_lists_hold_only_torchrl_names():
    python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if not python or not os.path.exists(python):
        pytest.skip("set TORCHENV_BENCH_TORCHRL_PYTHON to a python with torchrl installed")
    cases = {m: names for m, (_, names) in MODULE_MAP.items()}
    result = subprocess.run(
        [python, "-c", _TORCHRL_PROBE, json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
