"""``Choice``: a spec whose value is drawn from one of several specs (or fixed non-tensor values)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack, is_tensor_collection

from torchenv.specs._base import TensorSpec
from torchenv.specs._utils import DeviceLike

_NON_TENSOR = (NonTensorData, NonTensorStack)


def _check_choices(choices: Any) -> None:
    """Raises TorchRL's exceptions for a ``choices`` argument that a Choice cannot hold."""
    if not isinstance(choices, list):
        raise TypeError(f"'choices' must be a list, got {type(choices).__name__}")
    if not choices:
        raise ValueError("'choices' must hold at least one spec or non-tensor value")
    first = choices[0]
    if not isinstance(first, (TensorSpec, *_NON_TENSOR)):
        raise TypeError(
            "Each choice must be either a TensorSpec, NonTensorData, or NonTensorStack, "
            f"but got {type(first)}"
        )
    for what in ("type", "shape", "dtype", "device"):
        for choice in choices[1:]:
            if what == "type":
                if not isinstance(choice, type(first)):
                    raise TypeError(
                        f"All choices must be the same type: got {type(first).__name__} "
                        f"and {type(choice).__name__}"
                    )
            elif getattr(choice, what) != getattr(first, what):
                raise ValueError(
                    f"All choices must have the same {what}: got {getattr(first, what)} "
                    f"and {getattr(choice, what)}"
                )


class Choice(TensorSpec):
    """A value drawn from one of ``choices``, picked uniformly at random by ``rand``.

    Args:
        choices: a list of specs, or of ``NonTensorData`` / ``NonTensorStack`` values, all of the
            same type, shape, dtype and device.

    Raises:
        TypeError: if ``choices`` is not a list, holds something else, or mixes types.
        ValueError: if ``choices`` is empty, or the choices' shapes, dtypes or devices differ.

    >>> import torch
    >>> from torchenv.specs import Bounded, Choice
    >>> spec = Choice([Bounded(0, 1, shape=(1,)), Bounded(10, 11, shape=(1,))])
    >>> spec.num_choices, spec.shape
    (2, torch.Size([1]))
    >>> spec.is_in(torch.tensor([10.5])), spec.is_in(torch.tensor([5.0]))
    (True, False)
    """

    domain = None  # type: ignore[assignment]

    def __init__(self, choices: list[TensorSpec | NonTensorData | NonTensorStack]) -> None:
        _check_choices(choices)
        first = choices[0]
        self._set_shape(torch.Size(first.shape))
        self.device = first.device
        self.dtype = first.dtype
        self._choices = [choice.clone() for choice in choices]
        self._specs_inside = isinstance(first, TensorSpec)

    @classmethod
    def _from_choices(cls, choices: list[Any]) -> Choice:
        return cls(choices)

    def _map(self, fn: Callable[[Any], Any]) -> Choice:
        return self._from_choices([fn(choice) for choice in self._choices])

    @property
    def num_choices(self) -> int:
        """Number of choices."""
        return len(self._choices)

    # ------------------------------------------------------------------ sampling
    def _pick(self, idx: int, fn: Callable[[TensorSpec], Any]) -> Any:
        choice = self._choices[idx]
        return fn(choice) if self._specs_inside else choice

    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> Any:
        """A sample of a uniformly drawn choice (that choice itself for non-tensor choices)."""
        idx = int(torch.randint(0, len(self._choices), (), generator=generator).item())
        return self._pick(idx, lambda spec: spec.rand(shape, generator=generator))

    def zero(self, shape: Sequence[int] | None = None) -> Any:
        """The first choice's zero (the first choice itself for non-tensor choices)."""
        return self._pick(0, lambda spec: spec.zero(shape))

    def one(self, shape: Sequence[int] | None = None) -> Any:
        """The second choice's ``one()`` (the first's if there is only one)."""
        return self._pick(min(1, len(self._choices) - 1), lambda spec: spec.one(shape))

    # ------------------------------------------------------------------ membership
    def is_in(self, val: Any) -> bool:
        if self._specs_inside:
            return any(choice.is_in(val) for choice in self._choices)
        for choice in self._choices:
            if is_tensor_collection(val):
                try:
                    if bool((choice == val).all()):
                        return True
                except (RuntimeError, TypeError, ValueError):
                    continue
            elif choice.data == val:
                return True
        return False

    def _explain(self, val: Any) -> str:
        return f"the value matches none of the {len(self._choices)} choices"

    def _short(self) -> str:
        return f"Choice(num_choices={len(self._choices)}, shape={list(self.shape)})"

    def _project(self, val: Any) -> Any:
        raise NotImplementedError(
            "_project is not implemented for Choice: a value outside every choice has no "
            "natural projection."
        )

    def index(self, index: Any, tensor_to_index: Any) -> Any:
        raise NotImplementedError("index is not implemented for Choice.")

    def type_check(self, value: Any, key: Any = None) -> None:
        if self._specs_inside:
            self._choices[0].type_check(value, key)

    # ------------------------------------------------------------------ discrete helpers
    def cardinality(self) -> int:
        """The number of values: the sum over the choices (the number of non-tensor choices)."""
        if not self._specs_inside:
            return len(self._choices)
        return sum(choice.cardinality() for choice in self._choices)

    def enumerate(self, use_mask: bool = False) -> list[Any]:
        """Every value of every choice, as a list (each non-tensor choice once)."""
        if not self._specs_inside:
            return [choice.clone() for choice in self._choices]
        return [row for choice in self._choices for row in choice.enumerate(use_mask)]

    # ------------------------------------------------------------------ copies and shapes
    def clone(self) -> Choice:
        return self._map(lambda choice: choice)  # the constructor clones every choice

    def to(self, dest: DeviceLike | torch.dtype) -> Choice:
        return self._map(lambda choice: choice.to(dest))

    def expand(self, *shape: int | Sequence[int]) -> Choice:
        return self._map(lambda choice: choice.expand(*shape))

    def squeeze(self, dim: int | None = None) -> Choice:
        return self._map(lambda choice: choice.squeeze(dim))

    def unsqueeze(self, dim: int) -> Choice:
        return self._map(lambda choice: choice.unsqueeze(dim))

    def reshape(self, *shape: int | Sequence[int]) -> Choice:
        return self._map(lambda choice: choice.reshape(*shape))

    view = reshape

    def __getitem__(self, idx: Any) -> Choice:
        """Indexes every choice (TorchRL's Choice cannot be indexed)."""
        return self._map(lambda choice: choice[idx])

    def unbind(self, dim: int = 0) -> tuple[Choice, ...]:
        parts = [choice.unbind(dim) for choice in self._choices]
        return tuple(self._from_choices(list(row)) for row in zip(*parts))

    def _memo_children(self) -> tuple[TensorSpec, ...]:
        return tuple(self._choices) if self._specs_inside else ()

    # ------------------------------------------------------------------ comparison / display
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Choice) or other.num_choices != self.num_choices:
            return False
        for a, b in zip(self._choices, other._choices):
            if isinstance(a, torch.Tensor) or is_tensor_collection(a):
                if type(a) is not type(b) or not bool((a == b).all()):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def _repr_fields(self) -> list[tuple[str, Any]]:
        return [
            ("shape", self.shape),
            ("space", None),
            ("device", self.device),
            ("dtype", self.dtype),
            ("domain", self.domain),
        ]
