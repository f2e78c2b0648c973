"""Where models come from: MJCF files shipped by gymnasium, a path, or an XML string.

Nothing is downloaded: the standard tasks load the XML files that gymnasium installs under
``gymnasium/envs/mujoco/assets`` (gymnasium is a dependency of this plugin for that reason).
"""

from __future__ import annotations

import importlib.util
import os

import mujoco

__all__ = ["asset_path", "load_spec", "CONTACT_SENSOR_SITE"]

CONTACT_SENSOR_SITE = "_torchenv_cfrc_probe"


def asset_path(name: str) -> str:
    """The path of ``name`` among gymnasium's MuJoCo assets.

    >>> asset_path("half_cheetah.xml").endswith("half_cheetah.xml")
    True
    """
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "The standard MuJoCo tasks load their models from gymnasium's assets: "
            'pip install "torchenv-mujoco[tasks]" (gymnasium>=1.0).'
        )
    path = os.path.join(spec.submodule_search_locations[0], "envs", "mujoco", "assets", name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"gymnasium ships no MuJoCo asset {name!r} (looked for {path}).")
    return path


def load_spec(model: str | os.PathLike) -> mujoco.MjSpec:
    """An ``MjSpec`` from a path to an MJCF file or from an XML string.

    >>> load_spec("<mujoco/>").compile().nq
    0
    """
    text = os.fspath(model)
    if text.lstrip().startswith("<"):
        return mujoco.MjSpec.from_string(text)
    if not os.path.exists(text):
        raise FileNotFoundError(
            f"model: no MJCF file at {text!r} (expected a path or an XML string)."
        )
    return mujoco.MjSpec.from_file(text)


def with_contact_forces(spec: mujoco.MjSpec) -> mujoco.MjSpec:
    """Add an accelerometer, so that every ``mj_step`` computes ``cfrc_ext`` (contact forces).

    ``mj_step`` leaves ``cfrc_ext`` empty unless a sensor needs it; a site and a sensor change
    nothing else in the physics.
    """
    body = spec.worldbody.first_body()
    body.add_site(name=CONTACT_SENSOR_SITE)
    spec.add_sensor(
        name=CONTACT_SENSOR_SITE,
        type=mujoco.mjtSensor.mjSENS_ACCELEROMETER,
        objtype=mujoco.mjtObj.mjOBJ_SITE,
        objname=CONTACT_SENSOR_SITE,
    )
    return spec
