"""TorchRL's multi-agent PPO tutorial (``tutorials/sphinx-tutorials/multiagent_ppo.py`` in
pytorch/rl, TorchRL 0.14.1) on torchenv's VMAS env.

The tutorial trains MAPPO (or IPPO) on VMAS's *navigation*: a shared-parameter policy
(``MultiAgentMLP`` -> ``TanhNormal``), a centralised critic, ``SyncDataCollector``, ``ClipPPOLoss``
with GAE. This copy follows its steps and TorchRL calls; the ONLY change is where the env comes
from (the block marked ENV below): ``torchenv_vmas.VmasEnv`` and torchenv's ``TransformedEnv``,
``RewardSum`` and ``check_env_specs`` instead of ``torchrl.envs``. Everything marked TORCHRL-ONLY
is TorchRL's training stack (collectors, modules, losses, replay buffers): it needs ``torchrl``
installed next to torchenv (a venv made with ``-c constraints-torchrl.txt torchrl==0.14.1``,
then ``pip install -e core -e plugins/vmas``).

Short run (a few iterations, small batches) by default; ``--full`` uses the tutorial's sizes::

    python examples/multiagent_ppo_vmas.py            # 3 iterations of 600 frames
    python examples/multiagent_ppo_vmas.py --full     # 10 iterations of 6000 frames, 30 epochs
"""

from __future__ import annotations

import argparse

import torch

# ---- TORCHRL-ONLY: tensordict modules and TorchRL's training stack (unchanged from the tutorial)
from tensordict.nn import TensorDictModule
from tensordict.nn.distributions import NormalParamExtractor
from torchrl.collectors import Collector  # TorchRL 0.14 name of SyncDataCollector
from torchrl.data.replay_buffers import ReplayBuffer
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
from torchrl.data.replay_buffers.storages import LazyTensorStorage
from torchrl.modules import MultiAgentMLP, ProbabilisticActor, TanhNormal
from torchrl.objectives import ClipPPOLoss, ValueEstimators

# ---- ENV: the only lines that differ from the tutorial --------------------------------------
# tutorial:  from torchrl.envs import RewardSum, TransformedEnv
#            from torchrl.envs.libs.vmas import VmasEnv
#            from torchrl.envs.utils import check_env_specs
from torchenv import RewardSum, TransformedEnv, check_env_specs
from torchenv_vmas import VmasEnv

# ---------------------------------------------------------------------------------------------


def main(full: bool = False) -> list[float]:
    torch.manual_seed(0)
    device = "cuda:0" if torch.cuda.is_available() else "cpu"
    vmas_device = device

    # Sampling and training sizes (the tutorial's with --full; a short smoke run otherwise)
    frames_per_batch = 6_000 if full else 600
    n_iters = 10 if full else 3
    total_frames = frames_per_batch * n_iters
    num_epochs = 30 if full else 2
    minibatch_size = 400 if full else 200
    lr, max_grad_norm = 3e-4, 1.0
    clip_epsilon, gamma, lmbda, entropy_eps = 0.2, 0.9, 0.9, 1e-4

    # Environment: navigation, 3 agents, episodes of max_steps, frames_per_batch / max_steps envs
    max_steps = 100
    num_vmas_envs = frames_per_batch // max_steps
    env = VmasEnv(
        scenario="navigation",
        num_envs=num_vmas_envs,
        continuous_actions=True,
        max_steps=max_steps,
        device=vmas_device,
        n_agents=3,
    )
    print("action_spec:", env.action_spec)
    print("full_action_spec:", env.input_spec["full_action_spec"])
    print(
        "action_keys:",
        env.action_keys,
        "reward_keys:",
        env.reward_keys,
        "done_keys:",
        env.done_keys,
    )
    env = TransformedEnv(
        env, RewardSum(in_keys=[env.reward_key], out_keys=[("agents", "episode_reward")])
    )
    check_env_specs(env)
    rollout = env.rollout(5)
    print("rollout batch size:", rollout.batch_size)

    # ---- TORCHRL-ONLY from here: policy, critic, collector, buffer, loss, training loop -----
    policy_net = torch.nn.Sequential(
        MultiAgentMLP(
            n_agent_inputs=env.observation_spec["agents", "observation"].shape[-1],
            n_agent_outputs=2 * env.action_spec.shape[-1],
            n_agents=env.n_agents,
            centralised=False,
            share_params=True,
            device=device,
            depth=2,
            num_cells=256,
            activation_class=torch.nn.Tanh,
        ),
        NormalParamExtractor(),
    )
    policy_module = TensorDictModule(
        policy_net,
        in_keys=[("agents", "observation")],
        out_keys=[("agents", "loc"), ("agents", "scale")],
    )
    policy = ProbabilisticActor(
        module=policy_module,
        spec=env.full_action_spec_unbatched,
        in_keys=[("agents", "loc"), ("agents", "scale")],
        out_keys=[env.action_key],
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": env.full_action_spec_unbatched[env.action_key].space.low,
            "high": env.full_action_spec_unbatched[env.action_key].space.high,
        },
        return_log_prob=True,
    )
    critic_net = MultiAgentMLP(
        n_agent_inputs=env.observation_spec["agents", "observation"].shape[-1],
        n_agent_outputs=1,
        n_agents=env.n_agents,
        centralised=True,  # MAPPO (False: IPPO)
        share_params=True,
        device=device,
        depth=2,
        num_cells=256,
        activation_class=torch.nn.Tanh,
    )
    critic = TensorDictModule(
        module=critic_net, in_keys=[("agents", "observation")], out_keys=[("agents", "state_value")]
    )
    print("policy output keys:", sorted(map(str, policy(env.reset()).keys(True, True)))[:4], "...")

    collector = Collector(
        env,
        policy,
        device=vmas_device,
        storing_device=device,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
    )
    replay_buffer = ReplayBuffer(
        storage=LazyTensorStorage(frames_per_batch, device=device),
        sampler=SamplerWithoutReplacement(),
        batch_size=minibatch_size,
    )
    loss_module = ClipPPOLoss(
        actor_network=policy,
        critic_network=critic,
        clip_epsilon=clip_epsilon,
        entropy_coeff=entropy_eps,
        normalize_advantage=False,
    )
    loss_module.set_keys(
        reward=env.reward_key,
        action=env.action_key,
        value=("agents", "state_value"),
        done=("agents", "done"),
        terminated=("agents", "terminated"),
    )
    loss_module.make_value_estimator(ValueEstimators.GAE, gamma=gamma, lmbda=lmbda)
    gae = loss_module.value_estimator
    optim = torch.optim.Adam(loss_module.parameters(), lr)

    episode_reward_mean_list = []
    for i, tensordict_data in enumerate(collector):
        # the value estimator wants done/terminated with the reward's shape (per agent)
        shape = tensordict_data.get_item_shape(("next", env.reward_key))
        for flag in ("done", "terminated"):
            tensordict_data.set(
                ("next", "agents", flag),
                tensordict_data.get(("next", flag)).unsqueeze(-1).expand(shape),
            )
        with torch.no_grad():
            gae(
                tensordict_data,
                params=loss_module.critic_network_params,
                target_params=loss_module.target_critic_network_params,
            )
        replay_buffer.extend(tensordict_data.reshape(-1))
        for _ in range(num_epochs):
            for _ in range(frames_per_batch // minibatch_size):
                subdata = replay_buffer.sample()
                loss_vals = loss_module(subdata)
                loss_value = (
                    loss_vals["loss_objective"]
                    + loss_vals["loss_critic"]
                    + loss_vals["loss_entropy"]
                )
                loss_value.backward()
                torch.nn.utils.clip_grad_norm_(loss_module.parameters(), max_grad_norm)
                optim.step()
                optim.zero_grad()
        collector.update_policy_weights_()
        done = tensordict_data.get(("next", "agents", "done"))
        mean = tensordict_data.get(("next", "agents", "episode_reward"))[done].mean().item()
        episode_reward_mean_list.append(mean)
        print(f"iteration {i}: episode_reward_mean = {mean:.3f}")
    collector.shutdown()
    return episode_reward_mean_list


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="the tutorial's sizes")
    main(full=parser.parse_args().full)
