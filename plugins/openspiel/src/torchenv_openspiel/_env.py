"""``OpenSpielWrapper`` and ``OpenSpielEnv``: OpenSpiel games as multi-agent torchenv envs.

Players ``player_0`` ... ``player_{n-1}`` are grouped under nested keys by
:class:`~torchenv.envs.MarlLayout`, with TorchRL's ``OpenSpielWrapper`` layout:
``(group, "observation")`` and ``(group, "information_state")`` (the tensors the game provides),
``(group, "action")``, ``(group, "reward")``, root ``"done"``/``"terminated"``,
``"current_player"`` and ``"state"`` (``return_state``). Like PettingZoo's turn-based envs they
also carry ``(group, "mask")`` (who acts) and ``(group, "action_mask")`` (the legal actions),
which are written into the action spec's mask on every reset and step. Chance nodes are
resolved by the env with its own seeded generator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from torchenv.envs import EnvBase, MarlGroupMapType, MarlLayout
from torchenv.specs import NonTensor, Unbounded
from torchenv_openspiel._backend import import_pyspiel
from torchenv_openspiel._games import game_names, load_game
from torchenv_openspiel._specs import INFORMATION_STATE, OBSERVATION, game_info

__all__ = ["OpenSpielEnv", "OpenSpielWrapper"]

GroupMap = MarlGroupMapType | Mapping[str, Sequence[str]] | None
ChanceSampler = Callable[[list, list], int]


class _classproperty:
    """A read-only property computed on the class (``OpenSpielEnv.available_envs``)."""

    def __init__(self, fget: Callable[[type], Any]) -> None:
        self.fget = fget
        self.__doc__ = fget.__doc__

    def __get__(self, obj: Any, owner: type) -> Any:
        return self.fget(owner)


class OpenSpielWrapper(EnvBase):
    """An OpenSpiel game as a torchenv env, with TorchRL's ``OpenSpielWrapper`` API.

    Each step, the players whose turn it is act: one player at a decision node, every player
    with a legal action at a simultaneous-move node. Their actions are read from their groups'
    ``"action"`` entries (the other players' are ignored). Chance nodes never reach the agents:
    the env samples their outcomes (with ``chance_sampler``, or its generator seeded by
    :meth:`set_seed`) until a player must act or the game is over.

    Every output carries ``(group, "mask")`` (the players who act next) and
    ``(group, "action_mask")`` (their legal actions; players who do not act may only play
    action 0, which is ignored, as in TorchRL), and the action spec's mask follows it, so
    ``rand_action`` and the ``ActionMask`` transform pick legal actions. An illegal action
    raises a ``ValueError`` naming the player, the action and the legal ones.

    Rewards are the change of the players' returns (``state.returns()``) over the step,
    chance outcomes included; TorchRL reports the returns themselves, which is the same for
    games that only score at the end.

    Args:
        env: a ``pyspiel.State`` (TorchRL) or a ``pyspiel.Game``. Resets start a new game
            (``game.new_initial_state()``).
        group_map: a :class:`~torchenv.envs.MarlGroupMapType` or a dict group -> players.
            Default ``ALL_IN_ONE_GROUP`` (group ``"agents"``); ``None``: one group per player.
        categorical_actions: actions as indices (``Categorical``) or one-hot (``OneHot``,
            the default, as in TorchRL).
        return_state: add the root ``"state"``: the serialised game state (a string). Reset
            to it with ``env.reset(td, set_state=True)``.
        chance_sampler: ``(actions, probabilities) -> action`` choosing chance outcomes;
            default: the env's generator (seeded by ``set_seed``).
        **kwargs: :class:`~torchenv.envs.EnvBase` arguments (``device``, ...).

    Its attributes: ``group_map``, ``agent_names``, ``num_players``, ``categorical_actions``,
    ``return_state``, ``parallel`` (the game has simultaneous moves), ``game``, ``game_state``,
    ``available_envs``.

    >>> import pyspiel
    >>> env = OpenSpielWrapper(pyspiel.load_game("tic_tac_toe"), categorical_actions=True)
    >>> td = env.reset()
    >>> td["agents", "mask"].tolist(), td["agents", "action_mask"].sum(-1).tolist()
    ([True, False], [9, 1])
    >>> td = env.rand_step(td)
    >>> td["next", "current_player"].item()
    1
    """

    _supports_set_state = True

    def __init__(
        self,
        env: Any = None,
        *,
        group_map: GroupMap = MarlGroupMapType.ALL_IN_ONE_GROUP,
        categorical_actions: bool = False,
        return_state: bool = False,
        chance_sampler: ChanceSampler | None = None,
        **kwargs: Any,
    ) -> None:
        pyspiel = import_pyspiel()
        if isinstance(env, pyspiel.State):
            game = env.get_game()
        elif isinstance(env, pyspiel.Game):
            game = env
        else:
            raise TypeError(
                "OpenSpielWrapper: expected a pyspiel.State or pyspiel.Game as `env` (e.g. "
                f"pyspiel.load_game('kuhn_poker')), got {type(env).__name__}"
            )
        if chance_sampler is not None and not callable(chance_sampler):
            raise TypeError(
                "OpenSpielWrapper: chance_sampler must be a callable (actions, probabilities) "
                f"-> action, got {type(chance_sampler).__name__}"
            )
        batch_size = kwargs.pop("batch_size", None)
        if batch_size is not None and len(batch_size):
            raise ValueError(
                f"OpenSpielWrapper: batch_size={tuple(batch_size)}; OpenSpiel envs are single "
                "envs (batch them with SerialEnv / ParallelEnv)"
            )
        for key in ("from_pixels", "pixels_only"):
            if kwargs.pop(key, False):
                raise NotImplementedError(
                    f"OpenSpielWrapper: {key}=True is not supported; OpenSpiel games have no "
                    "pixels (str(env.game_state) draws the board)"
                )
        info = game_info(pyspiel, game)
        # a reset may restore any state, a finished game included (TorchRL)
        kwargs.setdefault("allow_done_after_reset", True)
        super().__init__(**kwargs)
        self._pyspiel = pyspiel
        self.game = game
        self._info = info
        self.categorical_actions = bool(categorical_actions)
        self.return_state = bool(return_state)
        self.parallel = info.simultaneous
        self._chance_sampler = chance_sampler
        self._rng = np.random.default_rng()
        self._build(group_map)
        self.__dict__["game_state"] = env if isinstance(env, pyspiel.State) else None
        self.__dict__["_returns"] = np.zeros(info.num_players)
        self.__dict__["_legal"] = None

    # ------------------------------------------------------------------ construction
    def _build(self, group_map: GroupMap) -> None:
        info = self._info
        self.agent_names = info.agents
        self.num_players = info.num_players
        keys = [key for key, _ in info.observation_keys]
        # the layout holds the first tensor at (group, "observation"); a game with only an
        # information state has it renamed, and the second tensor is set next to the first
        self._primary = keys[0]
        self._secondary = keys[1] if len(keys) > 1 else None
        primary_spec = info.observation_spec(self._primary)
        layout = MarlLayout(
            self.agent_names,
            group_map,
            observation_specs={a: primary_spec for a in self.agent_names},
            action_specs={a: info.action_spec(self.categorical_actions) for a in self.agent_names},
            action_mask=True,
            agent_mask=True,
            done="root",
            truncated=False,
            device=self.device,
            default_group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map,  # as TorchRL
        )
        layout.set_specs(self)
        self._layout = layout
        self.group_map = layout.group_map
        observation = self.full_observation_spec.clone()
        for group, members in self.group_map.items():
            sub = observation[group]
            if self._primary != OBSERVATION:
                sub[self._primary] = sub["observation"]
                del sub["observation"]
            if self._secondary is not None:
                spec = info.observation_spec(self._secondary)
                sub[self._secondary] = spec.expand(len(members), *spec.shape).to(self.device)
        observation["current_player"] = Unbounded(shape=(), dtype=torch.int32, device=self.device)
        if self.return_state:
            observation["state"] = NonTensor(shape=(), device=self.device, example_data="")
        self.full_observation_spec = observation
        # group -> the players' rows in the (n, ...) arrays (a slice: no copy for one group)
        self._groups = []
        for group, members in self.group_map.items():
            positions = [self.agent_names.index(a) for a in members]
            rows = slice(None) if positions == list(range(self.num_players)) else positions
            self._groups.append((group, rows))
        self._cpu = self.device is None or self.device.type == "cpu"
        # the action specs whose masks follow the legal actions (the env's own spec objects:
        # specs are locked, so they stay the same)
        self._mask_specs = [
            (rows, self.full_action_spec[group, "action"]) for group, rows in self._groups
        ]

        getters = {OBSERVATION: "observation_tensor", INFORMATION_STATE: "information_state_tensor"}
        self._getters = [(key, getters[key]) for key in keys]
        self._shapes = dict(info.observation_keys)

    # ------------------------------------------------------------------ TorchRL's attributes
    @_classproperty
    def available_envs(cls) -> list[str]:
        """The short names of the games OpenSpiel registers."""
        return game_names()

    @property
    def lib(self) -> Any:
        """The ``pyspiel`` module."""
        return self._pyspiel

    @property
    def num_agents(self) -> int:
        return self.num_players

    def current_player(self) -> int:
        """OpenSpiel's current player: a player index, ``-2`` at a simultaneous-move node, ``-4``
        once the game is over."""
        return self.game_state.current_player()

    # ------------------------------------------------------------------ game mechanics
    def _sample_chance(self, outcomes: list[tuple[int, float]]) -> int:
        if self._chance_sampler is not None:
            actions, probabilities = zip(*outcomes, strict=True)
            return int(self._chance_sampler(list(actions), list(probabilities)))
        u = self._rng.random()
        total = 0.0
        for action, probability in outcomes:
            total += probability
            if u < total:
                return action
        return outcomes[-1][0]

    def _resolve_chance(self, state: Any) -> None:
        """Samples chance outcomes until a player must act or the game is over."""
        while state.is_chance_node():
            state.apply_action(self._sample_chance(state.chance_outcomes()))

    def _acting(self, state: Any) -> tuple[list[int], np.ndarray]:
        """The players who act next and the legal-action masks of all players (``(n, A)``;
        the others may only play action 0)."""
        n, num_actions = self.num_players, self._info.num_actions
        legal = np.zeros((n, num_actions), dtype=bool)
        if state.is_terminal():
            acting: list[int] = []
        elif state.is_simultaneous_node():
            acting = []
            for player in range(n):
                actions = state.legal_actions(player)
                if actions:
                    legal[player, actions] = True
                    acting.append(player)
        else:
            player = state.current_player()
            legal[player, state.legal_actions(player)] = True
            acting = [player]
        idle = np.ones(n, dtype=bool)
        idle[acting] = False
        legal[idle, 0] = True
        return acting, legal

    def _check_legal(self, player: int, action: int) -> None:
        legal = self._legal
        if 0 <= action < legal.shape[1] and legal[player, action]:
            return
        allowed = np.flatnonzero(legal[player]).tolist()
        raise ValueError(
            f"{type(self).__name__}({self._info.name}): {self.agent_names[player]} played "
            f"action {action}, which is not legal here; legal actions: {allowed}. Follow "
            "(group, 'action_mask') (e.g. with the ActionMask transform or env.rand_action)"
        )

    # ------------------------------------------------------------------ outputs
    def _read(self, state: Any, which: int) -> np.ndarray:
        """Every player's ``which``-th tensor (observation or information state), ``(n, *shape)``."""
        key, method = self._getters[which]
        read = getattr(state, method)
        values = np.asarray([read(p) for p in range(self.num_players)], dtype=np.float32)
        return values.reshape(self.num_players, *self._shapes[key])

    def _output(self, rewards: np.ndarray | None) -> TensorDictBase:
        state = self.game_state
        acting, legal = self._acting(state)
        # a copy of its own for the legality checks and the specs' masks: the output's
        # action_mask may share the memory of ``legal``
        check = legal.copy()
        self.__dict__["_legal"] = check
        names = self.agent_names
        per_agent: dict[str, Any] = {
            "observation": self._read(state, 0),
            "action_mask": legal,
        }
        if rewards is not None:
            per_agent["reward"] = rewards
        terminal = state.is_terminal()
        device = None if self._cpu else self.device
        root = {
            "done": torch.tensor([terminal], device=device),
            "terminated": torch.tensor([terminal], device=device),
        }
        out = self._layout.output(per_agent, root, acting=[names[p] for p in acting])
        secondary = self._read(state, 1) if self._secondary is not None else None
        for group, positions in self._groups:
            sub = out.get(group)
            if self._primary != OBSERVATION:
                sub.rename_key_(OBSERVATION, self._primary)
            if secondary is not None:
                value = torch.from_numpy(secondary[positions])
                sub.set(self._secondary, value if self._cpu else value.to(self.device))
        # TorchRL keeps the action specs masked, so that rand_action follows the legal actions
        for rows, spec in self._mask_specs:
            mask = torch.from_numpy(check[rows])
            spec.mask = mask if self._cpu else mask.to(self.device)
        out.set(
            "current_player",
            torch.tensor(state.current_player(), dtype=torch.int32, device=self.device),
        )
        if self.return_state:
            out.set_non_tensor("state", state.serialize())
        return out

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        if kwargs.get("set_state"):
            state = self._restore(tensordict)
        else:
            state = self.game.new_initial_state()
        self._resolve_chance(state)
        self.__dict__["game_state"] = state
        self.__dict__["_returns"] = np.asarray(state.returns())
        return self._output(None)

    def _restore(self, tensordict: TensorDictBase | None) -> Any:
        value = None if tensordict is None else tensordict.get("state", None)
        value = getattr(value, "data", value)
        if not isinstance(value, str):
            raise KeyError(
                f"{type(self).__name__}: reset(set_state=True) needs the serialised game state "
                "at 'state' (a str, as return_state=True gives); got "
                f"{type(value).__name__ if value is not None else 'nothing'}"
            )
        return self._deserialize(value)

    def _deserialize(self, value: str) -> Any:
        try:
            return self.game.deserialize_state(value)
        except (self._pyspiel.SpielError, ValueError, RuntimeError) as err:
            raise ValueError(
                f"{type(self).__name__}({self._info.name}): cannot restore the state {value!r}: "
                f"{err}"
            ) from err

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        state = self.game_state
        if state is None:
            raise RuntimeError(f"{type(self).__name__}: call reset() before step()")
        layout = self._layout
        if state.is_terminal():
            pass  # the game is over: nothing to play (TorchRL); the output says done
        elif state.is_simultaneous_node():
            actions = layout.split_actions(tensordict, numpy=True, categorical=True)
            chosen = [int(actions[name]) for name in self.agent_names]
            acting, _ = self._acting(state)
            for player in range(self.num_players):
                if player in acting:
                    self._check_legal(player, chosen[player])
                else:
                    chosen[player] = 0
            state.apply_actions(chosen)
        else:
            player = state.current_player()
            action = int(
                layout.agent_action(
                    tensordict, self.agent_names[player], numpy=True, categorical=True
                )
            )
            self._check_legal(player, action)
            state.apply_action(action)
        self._resolve_chance(state)
        returns = np.asarray(state.returns())
        rewards = returns - self._returns
        self.__dict__["_returns"] = returns
        return self._output(rewards)

    def _set_seed(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)

    # ------------------------------------------------------------------ states
    def get_state(self) -> str:
        """The current game state, serialised by OpenSpiel (``state.serialize()``).

        >>> env = OpenSpielEnv("tic_tac_toe", categorical_actions=True)
        >>> td = env.reset()
        >>> saved = env.get_state()
        >>> td = env.rand_step(td)
        >>> env.set_state(saved)["current_player"].item()
        0
        """
        state = self.game_state
        if state is None:
            raise RuntimeError(f"{type(self).__name__}: call reset() before get_state()")
        return state.serialize()

    def set_state(self, state: str) -> TensorDictBase:  # type: ignore[override]
        """Restores a state from :meth:`get_state` (or a ``"state"`` entry) and returns the
        reset output there (no reward)."""
        if not isinstance(state, str):
            raise TypeError(
                f"{type(self).__name__}.set_state: expected the str of get_state(), got "
                f"{type(state).__name__}"
            )
        from tensordict import TensorDict

        td = TensorDict()
        td.set_non_tensor("state", state)
        return self.reset(td, set_state=True)

    # ------------------------------------------------------------------ rendering
    def render(self) -> str:
        """The game state as OpenSpiel prints it (``str(state)``)."""
        return str(self.game_state)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(game={self._info.name}, players={self.num_players}, "
            f"group_map={self.group_map}, device={self.device})"
        )


class OpenSpielEnv(OpenSpielWrapper):
    """An OpenSpiel game by name, with TorchRL's ``OpenSpielEnv`` arguments and defaults.

    Args:
        game_string: the game's short name (``"kuhn_poker"``) or an OpenSpiel game string with
            parameters (``"kuhn_poker(players=3)"``); ``OpenSpielEnv.available_envs`` lists the
            names.
        group_map: see :class:`OpenSpielWrapper`.
        categorical_actions: see :class:`OpenSpielWrapper`.
        return_state: see :class:`OpenSpielWrapper`.
        chance_sampler: see :class:`OpenSpielWrapper`.
        parameters: the game's parameters as a dict (``{"players": 3}``), instead of in the
            game string.
        **kwargs: :class:`~torchenv.envs.EnvBase` arguments (``device``, ...).

    >>> env = OpenSpielEnv("kuhn_poker")
    >>> _ = env.set_seed(0)
    >>> td = env.rollout(10)
    >>> td["next", "agents", "information_state"].shape[-2:]
    torch.Size([2, 11])
    >>> bool(td["next", "done"][-1])
    True
    """

    def __init__(
        self,
        game_string: str,
        *,
        group_map: GroupMap = MarlGroupMapType.ALL_IN_ONE_GROUP,
        categorical_actions: bool = False,
        return_state: bool = False,
        parameters: Mapping[str, Any] | None = None,
        chance_sampler: ChanceSampler | None = None,
        **kwargs: Any,
    ) -> None:
        game = load_game(game_string, parameters)
        super().__init__(
            game,
            group_map=group_map,
            categorical_actions=categorical_actions,
            return_state=return_state,
            chance_sampler=chance_sampler,
            **kwargs,
        )
        self.game_string = game_string

    def __repr__(self) -> str:
        return f"{super().__repr__()} (game_string={self.game_string!r})"
