"""The layout draws exactly what it drew before graph/layout.py was split into phases.

tests/data/layout_reference.npz was written by tests/graph/layout_reference.py from the
single-module layout (the commit before the split); every case must give the same arrays,
dtype and bits, or the same SHA-256 for the large ones.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.graph.layout_reference import REFERENCE, cases, digest, snapshot


@pytest.fixture(scope="module")
def reference() -> dict[str, dict[str, np.ndarray]]:
    with np.load(REFERENCE) as data:
        out: dict[str, dict[str, np.ndarray]] = {}
        for key in data.files:
            name, field = key.split("|")
            out.setdefault(name, {})[field] = data[key]
    return out


def test_every_case_draws_the_same_floats(reference):
    seen = []
    for name, lay in cases():
        if name not in reference:  # a model added to tests/data after the reference was
            continue               # recorded: the split never drew it the old way
        seen.append(name)
        snap, ref = snapshot(lay), reference[name]
        if "sha256" in ref:
            assert digest(snap) == str(ref["sha256"]), f"{name}: the drawing changed"
            continue
        assert sorted(snap) == sorted(ref), name
        for field, want in ref.items():
            got = np.asarray(snap[field])
            assert got.dtype == want.dtype and got.shape == want.shape, (name, field)
            assert got.tobytes() == want.tobytes(), (
                f"{name}.{field}: first difference at "
                f"{np.flatnonzero(got.ravel() != want.ravel())[:1].tolist()}")
    assert sorted(seen) == sorted(reference), "cases missing from the run"
    assert len(seen) > 150  # every corpus subgraph, three ways, plus the synthetic graphs


def test_the_comparison_notices_a_changed_float(reference):
    """The check above is not vacuous: a one-ulp change of one coordinate is caught."""
    name, lay = next(iter(cases()))
    snap = snapshot(lay)
    x = snap["x"].copy()
    x[0] = np.nextafter(x[0], np.inf)
    assert x.tobytes() != reference[name]["x"].tobytes()
    assert digest({**snap, "x": x}) != digest(snap)
