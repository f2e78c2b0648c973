"""Error messages name the spec (or key), what was expected and what was received."""

from __future__ import annotations

import pytest
import torch

from torchenv.specs import (
    Bounded,
    Categorical,
    Composite,
    OneHot,
    SpecTypeError,
    SpecValueError,
    Unbounded,
)


def test_assert_is_in_wrong_dtype():
    spec = Unbounded(shape=(3,))
    with pytest.raises(
        AssertionError, match=r"Unbounded.*expected dtype torch.float32, got dtype torch.int64"
    ):
        spec.assert_is_in(torch.zeros(3, dtype=torch.long))


def test_assert_is_in_wrong_shape():
    spec = Bounded(0, 1, shape=(2,))
    with pytest.raises(
        SpecValueError, match=r"expected a shape ending with \[2\], got shape \[3\]"
    ):
        spec.assert_is_in(torch.zeros(3))


def test_assert_is_in_out_of_range():
    spec = Bounded(0.0, 1.0, shape=(2,))
    with pytest.raises(SpecValueError, match=r"low=0.0, high=1.0.*got max 5.0 above high"):
        spec.assert_is_in(torch.tensor([0.5, 5.0]))
    with pytest.raises(ValueError, match=r"got min -2.0 below low"):
        spec.assert_is_in(torch.tensor([-2.0, 0.5]))


def test_assert_is_in_categorical_and_onehot():
    with pytest.raises(
        SpecValueError,
        match=r"Categorical\(n=3.*expected integers in \[0, 2\], got min 0 and max 4",
    ):
        Categorical(3, shape=(2,)).assert_is_in(torch.tensor([0, 4]))
    with pytest.raises(SpecValueError, match=r"OneHot\(n=3.*exactly one non-zero"):
        OneHot(3).assert_is_in(torch.tensor([True, True, False]))
    with pytest.raises(SpecValueError, match="expected a torch.Tensor, got list"):
        OneHot(3).assert_is_in([0, 1, 0])


def test_assert_is_in_passes_silently():
    spec = Bounded(0.0, 1.0, shape=(2,))
    spec.assert_is_in(spec.rand())


def test_type_check():
    spec = Categorical(2, shape=(1,), dtype=torch.bool)
    spec.type_check(torch.zeros(1, dtype=torch.bool))
    with pytest.raises(
        SpecTypeError, match=r"value.dtype=torch.int64 but Categorical.dtype=torch.bool.*'done'"
    ):
        spec.type_check(torch.zeros(1, dtype=torch.long), "done")
    with pytest.raises(TypeError):
        spec.type_check(torch.zeros(1))


def test_composite_assert_is_in_names_key():
    spec = Composite(
        {
            "agents": {"obs": Unbounded(shape=(2,))},
            "done": Categorical(2, shape=(1,), dtype=torch.bool),
        }
    )
    td = spec.zero()
    td["agents", "obs"] = torch.zeros(3)
    with pytest.raises(
        SpecValueError,
        match=r"key \('agents', 'obs'\).*expected a shape ending with \[2\], got shape \[3\]",
    ):
        spec.assert_is_in(td)
    missing = spec.zero().exclude("done")
    with pytest.raises(SpecValueError, match=r"key 'done' is missing.*Categorical"):
        spec.assert_is_in(missing)


def test_composite_type_check_names_key():
    spec = Composite(obs=Unbounded(shape=(2,)))
    td = spec.zero()
    td["obs"] = torch.zeros(2, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"float64.*float32.*'obs'"):
        spec.type_check(td)


def test_unknown_key_names_available_keys():
    spec = Composite(observation=Unbounded(1), reward=Unbounded(1))
    with pytest.raises(KeyError, match=r"'obs' not found.*\['observation', 'reward'\]"):
        spec["obs"]


def test_encode_wrong_shape():
    with pytest.raises(ValueError, match=r"cannot encode a value of shape \[5\]"):
        Unbounded(shape=(3,)).encode([1.0, 2.0, 3.0, 4.0, 5.0])
    with pytest.raises(SpecValueError, match=r"indices must be in \[0, 2\]"):
        OneHot(3).encode(3)


def test_bad_composite_key_type():
    with pytest.raises(TypeError, match="strings or tuples of strings"):
        Composite()[3.5] = Unbounded(1)
