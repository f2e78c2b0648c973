"""torchenv.cli: the ``torchenv`` command (``python -m torchenv.cli`` works too).

>>> from torchenv.cli import main
>>> main(["list", "builtin"])
builtin (3 envs)
  CartPole  Pendulum  TicTacToe
0
"""

from torchenv.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
