"""The ``space`` objects of specs: the set a value is drawn from (TorchRL's boxes)."""

from __future__ import annotations

from dataclasses import dataclass

import torch


def _tensor_repr(t: torch.Tensor) -> str:
    return (
        f"Tensor(shape={t.shape}, device={t.device}, dtype={t.dtype}, "
        f"contiguous={t.is_contiguous()})"
    )


class Box:
    """Base class of spec spaces."""


class ContinuousBox(Box):
    """A box ``[low, high]`` (element-wise) for Bounded/Unbounded specs.

    >>> import torch
    >>> box = ContinuousBox(torch.zeros(2), torch.ones(2))
    >>> box.high
    tensor([1., 1.])
    """

    def __init__(self, low: torch.Tensor, high: torch.Tensor) -> None:
        self.low = low
        self.high = high

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ContinuousBox)
            and self.low.shape == other.low.shape
            and bool((self.low == other.low).all())
            and bool((self.high == other.high).all())
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            "ContinuousBox(\n"
            f"    low={_tensor_repr(self.low)},\n"
            f"    high={_tensor_repr(self.high)})"
        )


@dataclass(frozen=True)
class CategoricalBox(Box):
    """``n`` categories ``{0, ..., n - 1}``.

    >>> CategoricalBox(3).n
    3
    """

    n: int

    def __repr__(self) -> str:
        return f"CategoricalBox(n={self.n})"


@dataclass(frozen=True)
class BinaryBox(Box):
    """``n`` independent binary values."""

    n: int

    def __repr__(self) -> str:
        return f"BinaryBox(n={self.n})"


@dataclass(frozen=True)
class BoxList(Box):
    """One box per sub-space (MultiCategorical / MultiOneHot).

    >>> BoxList.from_nvec([2, 3]).boxes[1].n
    3
    """

    boxes: tuple

    @classmethod
    def from_nvec(cls, nvec: torch.Tensor | list[int]) -> BoxList:
        if isinstance(nvec, torch.Tensor):
            nvec = nvec.tolist()
        return cls(
            tuple(
                BoxList.from_nvec(n) if isinstance(n, list) else CategoricalBox(int(n))
                for n in nvec
            )
        )

    def __len__(self) -> int:
        return len(self.boxes)

    def __repr__(self) -> str:
        return f"BoxList(boxes={list(self.boxes)})"
