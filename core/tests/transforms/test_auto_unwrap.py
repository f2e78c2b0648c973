"""TorchRL's ``set_auto_unwrap_transformed_env`` toggle (issue 18), checked against TorchRL 0.14.1."""

import os

import torchenv
from torchenv.envs import PendulumEnv
from torchenv.transforms import StepCounter, TransformedEnv


def test_exported_at_top_level():
    # TorchRL: `torchrl.set_auto_unwrap_transformed_env` / `torchrl.auto_unwrap_transformed_env`.
    from torchenv.transforms import auto_unwrap_transformed_env, set_auto_unwrap_transformed_env

    assert torchenv.set_auto_unwrap_transformed_env is set_auto_unwrap_transformed_env
    assert torchenv.auto_unwrap_transformed_env is auto_unwrap_transformed_env


def test_context_manager_restores_default():
    # TorchRL 0.14.1 prints True, False, True.
    assert torchenv.auto_unwrap_transformed_env() is True
    assert torchenv.auto_unwrap_transformed_env(allow_none=True) is None
    with torchenv.set_auto_unwrap_transformed_env(False):
        assert torchenv.auto_unwrap_transformed_env() is False
        assert os.environ["AUTO_UNWRAP_TRANSFORMED_ENV"] == "False"
    assert torchenv.auto_unwrap_transformed_env() is True
    assert "AUTO_UNWRAP_TRANSFORMED_ENV" not in os.environ


def test_toggle_drives_transformed_env_nesting():
    inner = TransformedEnv(PendulumEnv(), StepCounter())
    assert not isinstance(TransformedEnv(inner).base_env, TransformedEnv)
    with torchenv.set_auto_unwrap_transformed_env(False):
        assert TransformedEnv(inner).base_env is inner
    # an explicit argument still wins over the toggle
    with torchenv.set_auto_unwrap_transformed_env(False):
        assert not isinstance(TransformedEnv(inner, auto_unwrap=True).base_env, TransformedEnv)


def test_decorator_form():
    @torchenv.set_auto_unwrap_transformed_env(False)
    def build():
        return torchenv.auto_unwrap_transformed_env()

    assert build() is False
    assert torchenv.auto_unwrap_transformed_env() is True
