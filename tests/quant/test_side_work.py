"""What the analysis does beside its samples: the checks of the files made in a child
(`parallel.start_side`) while the interpreters are built and the samples run, and the
float sums its interpreters take (`analysis.FLOAT_SUMS`)."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.model import load_model
from tflite_viewer.quant import analysis, analyze, parallel
from tflite_viewer.quant.analysis import Cancelled, make_samples
from tflite_viewer.quant.metrics import sqnr_db
from tflite_viewer.quant.samples import model_inputs

from .helpers import SMALL_FLOAT, SMALL_INT8


def _forking():
    if not parallel.can_fork():
        pytest.skip("forking children is Linux only")


def test_a_side_job_computes_in_a_child():
    _forking()
    side = parallel.start_side(os.getpid, workers=2)
    assert side.forked
    assert side.result() != os.getpid()


def test_a_side_job_is_computed_here_with_one_worker():
    side = parallel.start_side(os.getpid, workers=1)
    assert not side.forked and side.result() == os.getpid()


def test_a_side_job_that_fails_in_the_child_is_computed_here():
    _forking()
    parent = os.getpid()

    def only_here():
        if os.getpid() != parent:
            raise RuntimeError("failed in the child")
        return "computed here"

    assert parallel.start_side(only_here, workers=2).result() == "computed here"

    def always():
        raise ValueError("bad model")

    with pytest.raises(ValueError, match="bad model"):  # raised as a call here raises it
        parallel.start_side(always, workers=2).result()


def test_closing_a_side_job_stops_its_child():
    _forking()
    import multiprocessing
    before = set(multiprocessing.active_children())
    side = parallel.start_side(lambda: time.sleep(60), workers=2)
    (proc,) = [p for p in multiprocessing.active_children() if p not in before]
    side.close()
    assert _ends_within(proc.pid, 10)


def _ends_within(pid: int, seconds: float) -> bool:
    """Whether the process ``pid`` ends (exits, or is a zombie not yet reaped) within
    ``seconds``.  Read from /proc, not from ``Process.is_alive``: the pool's own manager
    thread may reap the worker while this thread waits on it, and then ``is_alive`` says
    True for a process that has ended."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in "ZX":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def test_the_checks_made_in_a_child_give_the_same_report(monkeypatch, tmp_path):
    """Forced on the small pair (normally too small for it): the findings and weights
    come from a child, and the report equals the one made in this process alone."""
    _forking()
    parent = os.getpid()
    one = analyze(SMALL_INT8, SMALL_FLOAT, samples=2, per_layer_fallback=True, workers=1)
    real_check = analysis.check_spec

    def check_spec(model):
        (tmp_path / str(os.getpid())).touch()
        return real_check(model)

    monkeypatch.setattr(analysis, "check_spec", check_spec)
    monkeypatch.setattr(parallel, "WORTH_SIDE_BYTES", 0)
    monkeypatch.setattr(parallel, "available_cpus", lambda: 2)
    two = analyze(SMALL_INT8, SMALL_FLOAT, samples=2, per_layer_fallback=True)
    pids = [int(p.name) for p in tmp_path.iterdir()]
    assert pids and parent not in pids
    assert one.weights  # (the pair breaks no spec rule: findings are empty either way)
    assert one.to_json() == two.to_json()


def test_the_side_job_is_for_models_big_enough():
    small = load_model(SMALL_INT8)
    assert not parallel.worth_a_side_job(analysis._constant_bytes(small))
    assert analysis._constant_bytes(small) == sum(
        b.nbytes for b in small.buffers)  # every buffer's bytes
    assert parallel.worth_a_side_job(parallel.WORTH_SIDE_BYTES)


def test_cancel_stops_the_side_job(monkeypatch):
    _forking()
    monkeypatch.setattr(parallel, "WORTH_SIDE_BYTES", 0)
    monkeypatch.setattr(parallel, "available_cpus", lambda: 2)
    monkeypatch.setattr(analysis, "check_spec", lambda model: time.sleep(60))
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        analyze(SMALL_INT8, SMALL_FLOAT, samples=3, cancel=lambda: True)
    assert time.monotonic() - t0 < 30
    deadline = time.monotonic() + 10
    import multiprocessing
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not multiprocessing.active_children()


def _first_float_values(report, fm, sums):
    """The float model's values of every compared tensor on the first sample, from
    ``report`` and from an interpreter of ``fm`` with ``sums``."""
    sample = make_samples(load_model(SMALL_INT8), fm, count=1)[0]
    interp = Interpreter(fm, float_sums=sums)
    interp.invoke(model_inputs(fm, sample))
    pairs = [(t.sample_values[0], interp.subgraphs[0].tensors[t.float_tensor].data)
             for t in report.compared() if t.sample_values is not None]
    assert pairs
    return pairs


def test_the_analysis_adds_float_products_as_blas_does_by_default():
    fm = load_model(SMALL_FLOAT)
    report = analyze(SMALL_INT8, fm, samples=1, keep_values=True, workers=1)
    assert report.float_sums == analysis.FLOAT_SUMS == "blas"
    assert report.to_dict()["float_sums"] == "blas"
    pairs = _first_float_values(report, fm, "blas")
    assert all(np.array_equal(ours, theirs.reshape(ours.shape)) for ours, theirs in pairs)
    reference = _first_float_values(report, fm, "reference")
    assert not all(np.array_equal(ours, theirs.reshape(ours.shape))
                   for ours, theirs in reference)  # the order shows in the last bits


def test_reference_float_sums_give_the_reference_bits_and_the_same_metrics():
    fm = load_model(SMALL_FLOAT)
    ref = analyze(SMALL_INT8, fm, samples=2, keep_values=True, workers=1,
                  float_sums="reference")
    assert ref.float_sums == "reference"
    pairs = _first_float_values(ref, fm, "reference")
    assert all(np.array_equal(ours, theirs.reshape(ours.shape)) for ours, theirs in pairs)
    blas = analyze(SMALL_INT8, fm, samples=2, workers=1)
    for a, b in zip(ref.compared(), blas.compared()):
        assert a.key == b.key
        # the order of the float sums moves every value by about 1e-7 of it: far below
        # quantization error, so the metrics agree to a hundredth of a dB
        assert a.metrics["sqnr_db"] == pytest.approx(b.metrics["sqnr_db"], abs=0.01)
        assert a.metrics["cosine"] == pytest.approx(b.metrics["cosine"], abs=1e-6)
    for ours, theirs in _first_float_values(ref, fm, "blas"):
        assert sqnr_db(ours, theirs.reshape(ours.shape)) > 100  # 1e-5 of the signal at most


def test_a_bad_float_sums_mode_is_refused():
    with pytest.raises(ValueError, match="float sums must be one of"):
        analyze(SMALL_INT8, SMALL_FLOAT, samples=1, float_sums="fast")
