"""What every test of the Compare tab checks: its figures against numpy on the two arrays."""
from __future__ import annotations

import numpy as np

from tflite_viewer.ui.panels.tensor_comparison import LARGEST_FIRST
from tflite_viewer.ui.state.tensor_stats import format_number


def check_comparison(comparison, a: np.ndarray, b: np.ndarray) -> None:
    """The Compare widget's statistics, histograms and values grid against numpy."""
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    d = fa - fb
    for col, x in enumerate((fa, fb, d)):
        assert comparison.stat("count", col) == f"{x.size:,}"
        for row, value in (("min", x.min()), ("max", x.max()), ("mean", x.mean()), ("std", x.std())):
            assert comparison.stat(row, col) == format_number(float(value)), (row, col)
    assert comparison.stat("shape", 0) == "[" + ", ".join(map(str, a.shape)) + "]"
    assert comparison.stat("max |difference|", 2) == format_number(float(np.abs(d).max()))
    assert comparison.stat("elements differing", 2) == \
        f"{int(np.count_nonzero(fa != fb)):,} of {a.size:,}"
    # both histograms on shared bins over the range of both; the error's over its own
    lo, hi = min(fa.min(), fb.min()), max(fa.max(), fb.max())
    ha, hb = comparison.overlay.histograms
    np.testing.assert_array_equal(ha.counts, np.histogram(fa, 64, (lo, hi))[0])
    np.testing.assert_array_equal(hb.counts, np.histogram(fb, 64, (lo, hi))[0])
    err = comparison.error.histogram
    assert int(err.counts.sum()) == d.size
    if d.min() < d.max():
        np.testing.assert_array_equal(err.counts, np.histogram(d, 64, (d.min(), d.max()))[0])
    # the values grid, largest difference first: both values and the difference
    comparison.order.setCurrentText(LARGEST_FIRST)
    model = comparison.values
    assert model.rowCount() == a.size
    k = int(np.argmax(np.abs(d).reshape(-1)))
    index, va, vb, vd = model.row_values(0)
    assert index == tuple(int(i) for i in np.unravel_index(k, a.shape))
    assert va == a.reshape(-1)[k] and vb == b.reshape(-1)[k] and vd == d.reshape(-1)[k]
    cells = [model.data(model.index(0, c)) for c in range(4)]
    assert cells[1:] == [format_number(float(v), model.digits) for v in (va, vb, vd)]
