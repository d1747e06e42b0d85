"""QUANTIZE from an 8-bit integer tensor (Requantize): every one of the 256 input values,
against LiteRT's reference kernels, bit for bit.  The kernel looks each input byte up in a
table of its 256 results (`kernels.quantize._ByteTable`)."""
from __future__ import annotations

import numpy as np
import pytest

from .singleop import Input, run_litert, run_ours, single_op_model

#: (input type, input (scale, zero point), output type, output (scale, zero point))
CASES = [
    (np.uint8, (0.0078125, 128), np.int8, (0.0078125, 0)),   # efficientnet_lite0's input
    (np.uint8, (0.02, 100), np.int8, (0.013, -7)),
    (np.int8, (0.05, 3), np.uint8, (0.04, 131)),
    (np.int8, (0.05, -4), np.int8, (0.11, 9)),               # a scale of 1/2.2: rounding
    (np.int8, (0.01, 0), np.int8, (0.5, 0)),                 # most values round to 0, +-1
    (np.uint8, (0.3, 0), np.uint8, (0.01, 20)),              # saturating both ends
]


@pytest.mark.parametrize("case", CASES, ids=[f"{np.dtype(c[0])}-{np.dtype(c[2])}-{k}"
                                             for k, c in enumerate(CASES)])
def test_every_byte_requantizes_as_litert(case):
    in_type, in_q, out_type, out_q = case
    values = np.arange(256, dtype=np.uint8).view(in_type).reshape(1, 16, 16)
    model = single_op_model("QUANTIZE", [Input(values.shape, in_type, in_q)],
                            [(out_type, out_q)], version=2)
    want = run_litert(model, [values])[0]
    got = run_ours(model, [values])[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 2  # (the case exercises the rescale, not one constant)
