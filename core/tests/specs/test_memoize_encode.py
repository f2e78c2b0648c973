"""``spec.memoize_encode()`` as TorchRL code calls it (issue 18), checked against TorchRL 0.14.1."""

import torch

from torchenv.specs import Categorical, Composite, Unbounded


def test_memoize_encode_on_a_nested_composite_keeps_encode_results():
    # TorchRL 0.14.1: memoize_encode() returns None and encode gives float32 [2] / int64 [].
    spec = Composite(a=Unbounded(2), b=Composite(c=Categorical(3)))
    assert spec.memoize_encode() is None
    assert spec["a"]._encode_memoized and spec["b", "c"]._encode_memoized
    out = spec.encode({"a": [1.0, 2.0], "b": {"c": 2}})
    assert out["a"].dtype == torch.float32 and out["a"].tolist() == [1.0, 2.0]
    assert out["b", "c"].dtype == torch.int64 and int(out["b", "c"]) == 2
    spec.memoize_encode(False)
    assert not spec["b", "c"]._encode_memoized
