"""Tic-tac-toe for two players (or one against a random opponent), stateless and vectorised."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase

from torchenv.envs._common import EnvBase
from torchenv.specs import Binary, Bounded, Categorical, Composite, Unbounded

__all__ = ["TicTacToeEnv"]

# The eight winning lines of the flattened 3x3 board: rows, columns, diagonals.
_LINES = torch.tensor(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]]
)
_EMPTY = -1


class TicTacToeEnv(EnvBase):
    """Tic-tac-toe on a 3x3 board between ``player0`` and ``player1``, who alternate.

    The env is stateless and batch-unlocked, like TorchRL's: the board travels in the
    tensordict, and ``env.reset(TensorDict(batch_size=[n]))`` plays ``n`` games at once.

    The board is seen from the player to move: ``1`` marks that player's cells, ``0`` the
    opponent's, ``-1`` the empty cells. ``"turn"`` is the player to move (0 or 1) and
    ``"action_mask"`` (bool, 9 cells) flags the legal moves; both are updated each step and
    :meth:`rand_action` samples legal moves only. A winning move ends the game and earns its
    player a reward of 1 (``("player0", "reward")`` or ``("player1", "reward")``); a full board
    ends it in a draw. Playing an occupied cell raises a :class:`ValueError`: policies must
    honour ``"action_mask"`` (the key TorchRL's ``ActionMask`` transform reads; TorchRL's own
    TicTacToeEnv calls it ``"mask"``).

    With ``single_player=True`` the agent is ``player0`` and ``player1`` answers each move at
    once with a uniformly random legal move drawn from the env's own (seedable) generator.

    Args:
        single_player: whether ``player1`` is played by the env at random. Defaults to ``False``.
        seed: seed of the env's generator (the random opponent). Defaults to a seed drawn from
            torch's global generator.
        device: device of the specs and data.

    >>> env = TicTacToeEnv(seed=0)
    >>> td = env.reset()
    >>> td = env.step(td.set("action", torch.tensor(4)))
    >>> td["next", "action_mask"].view(3, 3)[1, 1].item(), td["next", "turn"].item()
    (False, 1)
    """

    _batch_locked = False

    def __init__(
        self,
        *,
        single_player: bool = False,
        seed: int | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(device=device)
        self.single_player = single_player
        self.rng: torch.Generator | None = None
        self._lines = _LINES.to(self.device) if self.device is not None else _LINES
        device = self.device
        state = Composite(
            board=Bounded(low=-1, high=1, shape=(3, 3), dtype=torch.int32, device=device),
            turn=Categorical(2, shape=(1,), dtype=torch.int32, device=device),
            action_mask=Binary(n=9, shape=(9,), dtype=torch.bool, device=device),
            shape=(),
        )
        self.observation_spec = state
        self.state_spec = state.clone()
        self.action_spec = Categorical(9, shape=(), dtype=torch.int64, device=device)
        self.reward_spec = Composite(
            {
                ("player0", "reward"): Unbounded(shape=(1,), dtype=torch.float32, device=device),
                ("player1", "reward"): Unbounded(shape=(1,), dtype=torch.float32, device=device),
            },
            shape=(),
        )
        flag = Categorical(2, shape=(1,), dtype=torch.bool, device=device)
        self.full_done_spec = Composite(
            done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=()
        )
        if seed is None:  # the simulator only: random actions stay on torch's global generator
            self._set_seed(int(torch.empty((), dtype=torch.int64).random_().item()))
        else:  # as set_seed(seed): the random actions too
            self.set_seed(seed)

    def _set_seed(self, seed: int | None) -> None:
        rng = torch.Generator(device=self.device if self.device is not None else "cpu")
        if seed is None:
            rng.seed()
        else:
            rng.manual_seed(seed)
        self.rng = rng

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        shape = self.batch_size if tensordict is None else tensordict.batch_size
        device = self.device
        flag = torch.zeros((*shape, 1), dtype=torch.bool, device=device)
        return TensorDict(
            {
                "board": torch.full((*shape, 3, 3), _EMPTY, dtype=torch.int32, device=device),
                "turn": torch.zeros((*shape, 1), dtype=torch.int32, device=device),
                "action_mask": torch.ones((*shape, 9), dtype=torch.bool, device=device),
                "done": flag,
                "terminated": flag.clone(),
                "truncated": flag.clone(),
            },
            shape,
            device=device,
        )

    def _play(
        self, cells: torch.Tensor, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Marks ``action`` for the mover on flat boards ``cells`` ``[*B, 9]``.

        Returns the flat board seen by the next mover, whether the move won and whether the
        board is now full.
        """
        cells = cells.scatter(-1, action.unsqueeze(-1), 1)
        won = (cells[..., self._lines] == 1).all(-1).any(-1)
        empty = cells == _EMPTY
        full = ~empty.any(-1)
        flipped = torch.where(empty, cells, 1 - cells)
        return flipped, won, full

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        shape = tensordict.batch_size
        cells = tensordict.get("board").reshape(*shape, 9)
        turn = tensordict.get("turn")
        action = tensordict["action"].reshape(shape).long()
        taken = cells.gather(-1, action.unsqueeze(-1)).squeeze(-1) != _EMPTY
        if taken.any():
            where = taken.nonzero()[0].tolist()
            raise ValueError(
                f"TicTacToeEnv: illegal move: 'action'={action[tuple(where)].item()} plays a cell "
                f"that is already taken (batch index {tuple(where)}); legal moves are the cells "
                f"where 'action_mask' is True"
            )
        cells, won, full = self._play(cells, action)
        done = won | full
        mover = turn.squeeze(-1)
        win0 = won & (mover == 0)
        win1 = won & (mover == 1)
        next_turn = 1 - turn
        if self.single_player:
            # the env answers for player1 wherever player0 just moved and the game goes on
            answer = ~done & (mover == 0)
            if answer.any():
                scores = torch.rand(cells.shape, generator=self.rng, device=cells.device)
                reply = scores.masked_fill_(cells != _EMPTY, -1.0).argmax(-1)
                cells2, won2, full2 = self._play(cells, reply)
                won2 = won2 & answer
                keep = answer.unsqueeze(-1)
                cells = torch.where(keep, cells2, cells)
                win1 = win1 | won2
                done = done | won2 | (full2 & answer)
                next_turn = torch.where(keep, turn, next_turn)
        done = done.unsqueeze(-1)
        return TensorDict(
            {
                "board": cells.reshape(*shape, 3, 3),
                "turn": next_turn,
                "action_mask": cells == _EMPTY,
                ("player0", "reward"): win0.unsqueeze(-1).to(torch.float32),
                ("player1", "reward"): win1.unsqueeze(-1).to(torch.float32),
                "done": done,
                "terminated": done.clone(),
                "truncated": torch.zeros_like(done),
            },
            shape,
            device=self.device,
        )

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Writes a uniformly random *legal* move (per ``"action_mask"``) under ``"action"``.

        Draws from the generator seeded by ``set_seed`` (before a seed: torch's global
        generator, like ``TensorSpec.rand``). Without a mask, any cell.
        """
        if tensordict is None:
            tensordict = TensorDict(batch_size=self.batch_size, device=self.device)
        mask = tensordict.get("action_mask", None)
        generator = self._action_generator()
        if mask is None:
            action = self.action_spec.expand(tensordict.batch_size).rand(generator=generator)
        else:
            scores = torch.rand(mask.shape, device=mask.device, generator=generator)
            scores = scores.masked_fill_(~mask, -1.0)
            action = scores.argmax(-1)
        tensordict.set("action", action)
        return tensordict
