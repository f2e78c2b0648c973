"""The two stepping paths: mujoco.batch (>= 3.17) and the per-env loop give the same numbers."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from torchenv_mujoco._assets import asset_path, load_spec, with_contact_forces
from torchenv_mujoco._sim import BatchSim, LoopSim
from torchenv_mujoco._versions import batch_available, make_sim

pytestmark = pytest.mark.mujoco
needs_batch = pytest.mark.skipif(not batch_available(), reason="mujoco.batch needs MuJoCo >= 3.17")


def _model(name):
    return with_contact_forces(load_spec(asset_path(name))).compile()


def test_make_sim_picks_the_path_of_the_installed_version():
    model = _model("hopper.xml")
    sim = make_sim(model, 2, 1, ("xpos",))
    assert isinstance(sim, BatchSim if batch_available() else LoopSim)


@needs_batch
@pytest.mark.parametrize("xml", ["ant.xml", "hopper.xml"])
def test_batch_equals_loop(xml):
    model = _model(xml)
    fields = ("xpos", "cfrc_ext")
    sims = [BatchSim(model, 5, 2, fields), LoopSim(model, 5, 1, fields)]
    rng = np.random.default_rng(0)
    qpos = model.qpos0 + rng.uniform(-0.1, 0.1, (5, model.nq))
    qvel = rng.normal(0, 0.1, (5, model.nv))
    for sim in sims:
        sim.reset(None, qpos, qvel)
    for t in range(30):
        ctrl = rng.uniform(-1, 1, (5, model.nu))
        for sim in sims:
            sim.ctrl[:] = ctrl
            sim.step(4)
        if t == 10:  # a partial reset of rows 1 and 3
            for sim in sims:
                sim.reset(np.array([1, 3]), qpos[[1, 3]], qvel[[1, 3]])
        for name in ("qpos", "qvel"):
            np.testing.assert_array_equal(getattr(sims[0], name), getattr(sims[1], name))
        for name in fields:
            np.testing.assert_array_equal(sims[0].field(name), sims[1].field(name))


def test_contact_probe_computes_contact_forces():
    model = _model("ant.xml")
    sim = make_sim(model, 2, 1, ("cfrc_ext",))
    sim.reset(None, np.tile(model.qpos0, (2, 1)), np.zeros((2, model.nv)))
    for _ in range(20):  # the ant falls onto its legs
        sim.step(5)
    assert np.abs(sim.field("cfrc_ext")).sum() > 0


def test_get_data_is_one_env():
    model = _model("hopper.xml")
    sim = make_sim(model, 3, 1)
    sim.reset(
        None, np.tile(model.qpos0, (3, 1)) + np.arange(3)[:, None] * 0.01, np.zeros((3, model.nv))
    )
    data = sim.get_data(2)
    assert isinstance(data, mujoco.MjData)
    np.testing.assert_array_equal(data.qpos, sim.qpos[2])
