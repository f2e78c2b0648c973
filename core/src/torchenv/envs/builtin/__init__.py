"""Built-in pure-torch environments: no simulator needed.

>>> from torchenv.envs.builtin import CartPoleEnv, PendulumEnv, TicTacToeEnv
"""

from torchenv.envs.builtin._cartpole import CartPoleEnv
from torchenv.envs.builtin._pendulum import PendulumEnv
from torchenv.envs.builtin._tictactoe import TicTacToeEnv

__all__ = ["CartPoleEnv", "PendulumEnv", "TicTacToeEnv"]
