"""The fast per-layer fallback (only the changed op's downstream cone computed again, on
the sample's first run) equals the full re-run with the op's hook, bit for bit; the
analysis gives the same report with its samples shared among processes; the measuring
shortcuts (lookup tables, one-partition median, merged statistics) give the numbers of
the plain computations."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tflite_viewer.model import load_model
from tflite_viewer.quant import analyze, parallel
from tflite_viewer.quant.activations import new_stats
from tflite_viewer.quant.analysis import make_samples
from tflite_viewer.quant.cone import DownstreamCone
from tflite_viewer.quant.fallback import FallbackRunner
from tflite_viewer.quant.measure import Scratch, TensorMeter
from tflite_viewer.quant.metrics import median_in_place, tensor_metrics
from tflite_viewer.quant.pairing import pair_models
from tflite_viewer.quant.ranges import dequantize
from tflite_viewer.quant.runner import ModelRunner

from .helpers import MNV2_DYNAMIC, MNV2_FLOAT, MNV2_INT8, MODELS, SMALL_FLOAT, SMALL_INT8

PAIRS = {  # quantized, float model, every how many ops checked (the slow sweep: all)
    "small_cnn_int8": (SMALL_INT8, SMALL_FLOAT, 1),
    "mobilenet_v2_int8": (MNV2_INT8, MNV2_FLOAT, 3),
    "mobilenet_v2_dynamic": (MNV2_DYNAMIC, MNV2_FLOAT, 2),   # hybrid ops, float activations
    "uint8_no_float_model": (MODELS / "mobilenet_v1_0.25_224_quant.tflite", None, 6),
}


def _same(a: dict | None, b: dict | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k]))
        for k in a)


@pytest.mark.parametrize("name", list(PAIRS))
def test_cone_equals_the_full_rerun_bit_for_bit(name):
    _check_cone(name, PAIRS[name][2])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PAIRS))
def test_cone_equals_the_full_rerun_for_every_op(name):
    _check_cone(name, 1)


def _check_cone(name: str, stride: int) -> None:
    qpath, fpath, _ = PAIRS[name]
    qm = load_model(qpath)
    fm = load_model(fpath) if fpath is not None else None
    fb = FallbackRunner(qm, fm, pair_models(qm, fm) if fm is not None else None)
    runner = ModelRunner(qm)
    samples = make_samples(qm, fm, count=2 if name == "small_cnn_int8" else 1, seed=3)
    outs = list(qm.subgraphs[0].outputs)
    assert fb.float_ops
    recomputed = []
    for sample in samples:
        base = runner.run(sample)
        cone = DownstreamCone(runner.interpreter, 0, False)
        assert cone.why_not is None
        for k in list(fb.float_ops)[::stride] + list(fb.float_ops)[-1:]:
            # the interpreter holds the previous full re-run's tensors: the cone restores
            fast = cone.outputs(k[1], base, lambda tensors: fb.replacements(k, tensors), outs)
            fast_local = fb.take_local(k)
            # and leaves the first run's tensors in place
            assert all(runner.interpreter.subgraphs[0].tensors[i].data is base[(0, i)]
                       for (s, i) in base if s == 0)
            slow = runner.run(sample, after_op=fb.hook_for(k))
            slow_local = fb.take_local(k)
            for o in outs:
                assert fast[o].dtype == slow[(0, o)].dtype
                assert np.array_equal(fast[o], slow[(0, o)]), (name, k, o)
            assert _same(fast_local, slow_local), (name, k)
            recomputed.append(k if fast_local is not None else None)
    assert len(recomputed) == len(samples) * (len(list(fb.float_ops)[::stride]) + 1)
    assert sum(k is not None for k in recomputed) > len(recomputed) // 2  # ops measured


@pytest.mark.parametrize("name", ["small_cnn_int8", "mobilenet_v2_int8",
                                  "uint8_no_float_model"])
def test_every_op_at_once_equals_each_full_rerun(name):
    """`outputs_many` walks the plan once for every op's fallback, invoking a conv node
    once for all the runs it reads a changed value of (a batch stacked on the first axis):
    each op's outputs and own error still equal its full re-run's, bit for bit."""
    qpath, fpath, _ = PAIRS[name]
    qm = load_model(qpath)
    fm = load_model(fpath) if fpath is not None else None
    fb = FallbackRunner(qm, fm, pair_models(qm, fm) if fm is not None else None)
    runner = ModelRunner(qm)
    sample = make_samples(qm, fm, count=1, seed=5)[0]
    outs = list(qm.subgraphs[0].outputs)
    ops = list(fb.float_ops)
    base = runner.run(sample)
    cone = DownstreamCone(runner.interpreter, 0, False)
    got = cone.outputs_many([k[1] for k in ops], base,
                            lambda op, tensors: fb.replacements((0, op), tensors), outs)
    fast_local = {k: fb.take_local(k) for k in ops}
    assert all(runner.interpreter.subgraphs[0].tensors[i].data is base[(0, i)]
               for (s, i) in base if s == 0)  # the first run's tensors left in place
    if name != "small_cnn_int8":  # (a few-op chain has one run per conv node)
        assert cone.batched_calls > 0  # int8 and uint8 convolutions batched
    for k in ops:
        assert isinstance(got[k[1]], dict), (name, k, got[k[1]])
        slow = runner.run(sample, after_op=fb.hook_for(k))
        for o in outs:
            assert got[k[1]][o].dtype == slow[(0, o)].dtype
            assert np.array_equal(got[k[1]][o], slow[(0, o)]), (name, k, o)
        assert _same(fast_local[k], fb.take_local(k)), (name, k)


def test_a_batched_tail_requantizes_each_accumulator_as_alone():
    """The conv tail (`FloatRequantizer`) of a prepared shape takes a batch of such
    accumulators stacked on the first axis: each result equals its own call; a size that
    is not a multiple of the prepared one is refused."""
    from tflite_viewer.interpreter.quant_math import FloatRequantizer

    rng = np.random.default_rng(2)
    shape = (1, 5, 6, 24)
    tail = FloatRequantizer.build(rng.integers(1 << 30, (1 << 31) - 1, 24),
                                  rng.integers(-12, -1, 24), -3, -128, 127, np.int8, shape,
                                  "double", 2.0 ** 20, rng.integers(-5000, 5000, 24))
    assert tail is not None
    accs = rng.integers(-2 ** 20, 2 ** 20, (4,) + shape[1:]).astype(np.float64)
    batch = tail(accs)
    assert batch.shape == accs.shape and batch.dtype == np.int8
    for j in range(4):
        assert np.array_equal(batch[j:j + 1], tail(accs[j:j + 1]))
    with pytest.raises(ValueError, match="accumulator of"):
        tail(accs.reshape(-1)[:-24])


def test_analysis_with_the_cone_equals_the_analysis_without(monkeypatch):
    fast = analyze(SMALL_INT8, SMALL_FLOAT, samples=3, per_layer_fallback=True, workers=1)
    monkeypatch.setattr(DownstreamCone, "eligible", lambda self, sg, op: False)
    slow = analyze(SMALL_INT8, SMALL_FLOAT, samples=3, per_layer_fallback=True, workers=1)
    assert fast.to_json() == slow.to_json()
    for a, b in zip(fast.fallback, slow.fallback):
        assert a.per_input == b.per_input and a.error == b.error


def test_one_op_that_cannot_be_reused_leaves_the_others_and_a_failed_batch_runs_alone(
        monkeypatch):
    """In `outputs_many`, an op whose replacement fails gets `CannotReuse` (its full re-run
    then reports it) while the others are computed; a batch whose computation fails is
    computed run by run, with the same results."""
    from tflite_viewer.quant.cone import CannotReuse

    qm, fm = load_model(MNV2_INT8), load_model(MNV2_FLOAT)
    fb = FallbackRunner(qm, fm, pair_models(qm, fm))
    runner = ModelRunner(qm)
    base = runner.run(make_samples(qm, fm, count=1, seed=2)[0])
    outs = list(qm.subgraphs[0].outputs)
    ops = [k[1] for k in fb.float_ops]
    bad = ops[3]

    def replace(op, tensors):
        if op == bad:
            raise RuntimeError("no float kernel today")
        return fb.replacements((0, op), tensors)

    cone = DownstreamCone(runner.interpreter, 0, False)
    first = cone.outputs_many(ops, base, replace, outs)
    assert isinstance(first[bad], CannotReuse) and "no float kernel" in str(first[bad])
    assert cone.batched_calls > 0

    def broken(*args, **kwargs):
        raise MemoryError("no room for the batch")

    for step in runner.interpreter.subgraphs[0].plan_steps:
        batched = getattr(step[1], "batched", None)
        if batched is not None:
            step[1].batched = batched[:2] + (broken,)
    alone = DownstreamCone(runner.interpreter, 0, False)
    second = alone.outputs_many(ops, base, replace, outs)
    assert alone.batched_calls == 0
    for op in ops:
        if op == bad:
            assert isinstance(second[op], CannotReuse)
            continue
        for o in outs:
            assert np.array_equal(first[op][o], second[op][o]), op


def test_fallback_ops_taken_in_small_groups_give_the_same_report(monkeypatch):
    from tflite_viewer.quant import per_sample

    whole = analyze(MNV2_INT8, MNV2_FLOAT, samples=2, per_layer_fallback=True, workers=1)
    monkeypatch.setattr(per_sample, "CONE_BYTES", 1)  # one op at a time
    grouped = analyze(MNV2_INT8, MNV2_FLOAT, samples=2, per_layer_fallback=True, workers=1)
    assert whole.to_json() == grouped.to_json()


def test_cone_declines_what_a_rerun_would_compute_otherwise():
    from tflite_viewer.interpreter import Interpreter
    lstm = Interpreter(load_model(MODELS / "lstm_dynamic.tflite"))
    assert "calls other subgraphs" in DownstreamCone(lstm, 0, True).why_not
    assert "control-flow" in DownstreamCone(lstm, 0, False).why_not
    plain = Interpreter(load_model(SMALL_INT8))
    cone = DownstreamCone(plain, 0, False)
    assert cone.why_not is None and cone.eligible(0, 1) and not cone.eligible(1, 1)


def test_samples_shared_among_processes_give_the_same_report(monkeypatch):
    if not parallel.can_fork():
        pytest.skip("forking children is Linux only")
    monkeypatch.setattr(parallel, "WORTH_SECONDS", 0.0)
    monkeypatch.setattr(parallel, "available_cpus", lambda: 3)
    ticks = []
    one = analyze(SMALL_INT8, SMALL_FLOAT, samples=5, per_layer_fallback=True, workers=1,
                  keep_values=True)
    three = analyze(SMALL_INT8, SMALL_FLOAT, samples=5, per_layer_fallback=True, workers=3,
                    keep_values=True, progress=lambda d, t, m: ticks.append((d, t)))
    assert one.to_json() == three.to_json()
    for a, b in zip(one.tensors, three.tensors):
        assert a.per_input == b.per_input
        if a.sample_values is not None:
            assert all(np.array_equal(x, y) for x, y in zip(a.sample_values, b.sample_values))
        if a.activation is not None:
            assert np.array_equal(a.activation.q_hist, b.activation.q_hist)
            assert np.array_equal(a.activation.float_hist, b.activation.float_hist)
    assert ticks[-1][0] == ticks[-1][1]  # the progress reaches its total


def test_a_child_that_fails_leaves_its_samples_to_the_parent(monkeypatch):
    if not parallel.can_fork():
        pytest.skip("forking children is Linux only")
    monkeypatch.setattr(parallel, "WORTH_SECONDS", 0.0)
    import os
    parent = os.getpid()
    seen = []

    def work(job, here):
        if os.getpid() != parent:
            raise RuntimeError("child failure")
        seen.append(job)
        return job * 10

    got = []
    parallel.map_jobs(list(range(7)), work, lambda i, r, here: got.append((i, r, here)),
                      workers=2)
    assert [(i, r) for i, r, _ in got] == [(i, 10 * i) for i in range(7)]
    assert sorted(seen) == list(range(7))  # every job ended up computed here


def test_workers_are_not_held_by_results_this_process_has_not_read(monkeypatch, tmp_path):
    """A worker's results are large (a sample's statistics of every tensor, more than a
    pipe's buffer).  While this process is busy with ``meanwhile`` the workers compute
    every job, each returning 1 MB: ``meanwhile`` waits (up to 10 s) until every job has
    been computed, which it can only see if no worker waits for its results to be read."""
    if not parallel.can_fork():
        pytest.skip("forking children is Linux only")
    import os
    import time
    parent = os.getpid()
    marks = tmp_path / "marks"
    marks.mkdir()

    def work(job, here):
        if os.getpid() != parent:
            (marks / str(job)).touch()
        return bytes([job]) * (1 << 20)

    seen = []

    def meanwhile():
        deadline = time.monotonic() + 10
        while len(list(marks.iterdir())) < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        seen.append(len(list(marks.iterdir())))

    got = {}
    parallel.map_jobs(list(range(8)), work, lambda i, r, here: got.__setitem__(i, (r, here)),
                      workers=2, meanwhile=meanwhile, time_first=False)
    assert seen == [8]  # every job computed in a worker before this process read one
    assert got == {j: (bytes([j]) * (1 << 20), False) for j in range(8)}


def test_meanwhile_runs_here_while_the_workers_compute(monkeypatch, tmp_path):
    """``meanwhile`` (the file checks) does not wait for the jobs nor they for it: a job
    waits (up to 10 s) for ``meanwhile`` to start, and ``meanwhile`` for a job to end."""
    if not parallel.can_fork():
        pytest.skip("forking children is Linux only")
    import os
    import time
    parent = os.getpid()
    started, ended = tmp_path / "meanwhile started", tmp_path / "a job ended"

    def wait_for(path):
        deadline = time.monotonic() + 10
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return path.exists()

    def work(job, here):
        saw = wait_for(started)
        ended.touch()
        return os.getpid(), saw

    def meanwhile():
        assert os.getpid() == parent
        started.touch()
        overlap.append(wait_for(ended))

    overlap, got = [], {}
    parallel.map_jobs(list(range(4)), work, lambda i, r, here: got.__setitem__(i, r),
                      workers=2, meanwhile=meanwhile, time_first=False)
    assert overlap == [True] and sorted(got) == list(range(4))
    assert all(pid != parent and saw for pid, saw in got.values())


def test_cancel_stops_the_workers_in_their_job(tmp_path):
    """``check`` raising while the workers compute stops them, their running jobs too."""
    if not parallel.can_fork():
        pytest.skip("forking children is Linux only")
    import os
    import time

    def work(job, here):
        (tmp_path / str(os.getpid())).touch()
        time.sleep(60)

    t0 = time.monotonic()

    def check():
        if len(list(tmp_path.iterdir())) == 2 or time.monotonic() - t0 > 20:
            raise KeyboardInterrupt("cancelled")

    with pytest.raises(KeyboardInterrupt):
        parallel.map_jobs(list(range(4)), work, lambda i, r, here: None, workers=2,
                          check=check, time_first=False)
    pids = [int(p.name) for p in tmp_path.iterdir()]
    assert len(pids) == 2 and time.monotonic() - t0 < 30

    def gone(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    deadline = time.monotonic() + 10
    while not all(map(gone, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(map(gone, pids))


def test_table_measurements_equal_the_plain_computation():
    rng = np.random.default_rng(7)
    m = load_model(MNV2_INT8)
    tensors = [t for t in m.subgraphs[0].tensors if not t.is_constant][:12]
    scratch = Scratch()
    for t in tensors:
        meter = TensorMeter(t)
        q = rng.integers(-128, 128, t.shape).astype(np.int8)
        deq = dequantize(q, t.quantization)
        ref = (deq + rng.normal(0, float(t.quantization.scale[0]), t.shape)
               * (rng.random(t.shape) < 0.5)).astype(np.float32)  # half the values exact
        for r in (ref, None):
            fast, plain = new_stats(t).empty(), new_stats(t)
            row, values = meter.measure(q, r, fast, True, scratch)
            plain.add(q, r)
            for field in ("count", "at_min", "at_max", "q_low", "q_high", "float_count",
                          "float_below", "float_above"):
                assert getattr(fast, field) == getattr(plain, field), field
            assert np.array_equal(fast.q_hist, plain.q_hist)
            assert np.array_equal(fast.float_hist, plain.float_hist)
            if r is None:
                assert row is None and values is None
                continue
            expected = tensor_metrics(r, deq, float(t.quantization.scale[0]))
            assert row.keys() == expected.keys()
            for key in row:
                assert row[key] == pytest.approx(expected[key], rel=1e-12, abs=1e-15), key
            assert row["median_diff_ratio"] == expected["median_diff_ratio"]
            assert np.array_equal(values[1], deq.astype(np.float32))


def test_median_in_place_is_np_median():
    rng = np.random.default_rng(11)
    for _ in range(2000):
        n = int(rng.integers(1, 50))
        a = (rng.standard_normal(n) ** 2).astype(np.float32)
        a[rng.random(n) < rng.random()] = 0
        if rng.random() < 0.2:
            a[rng.integers(0, n)] = np.inf
        if rng.random() < 0.05:
            a[rng.integers(0, n)] = np.nan
        if rng.random() < 0.1:
            a[:] = a[0]
        expect = float(np.median(a))
        got = median_in_place(a.copy())
        assert got == expect or (math.isnan(got) and math.isnan(expect)), a


def test_median_by_buckets_is_np_median_on_long_vectors():
    """From `BUCKETS_FROM` values on, the median is selected by buckets of the float32
    bits: np.median's value on vectors of every kind a tensor's ratios take (half zeros,
    most zeros, none, all equal, magnitudes from 1e-30 to 1e30, inf, NaN, -0.0, and
    denormals around the middle, which go to the plain selection)."""
    from tflite_viewer.quant import metrics

    rng = np.random.default_rng(12)
    took = 0
    real = metrics._middle_by_buckets

    def counted(values, wanted, zeros):
        nonlocal took
        got = real(values, wanted, zeros)
        took += got is not None
        return got

    for case in range(400):
        n = int(rng.integers(metrics.BUCKETS_FROM, 6000))
        a = (np.abs(rng.standard_normal(n)) * 10.0 ** int(rng.integers(-30, 30))).astype(
            np.float32)
        a[rng.random(n) < [0.5, 0.9, 0.0, rng.random()][case % 4]] = 0
        if case % 17 == 0:
            a[:] = a[0]
        if case % 11 == 0:
            a[rng.integers(0, n)] = np.inf
        if case % 29 == 0:
            a[rng.integers(0, n)] = np.nan
        if case % 23 == 0:
            a[rng.integers(0, n)] = -0.0
        if case % 31 == 0:
            a[: n // 2 + 2] = np.float32(1e-40)  # denormals at the middle
        expect = float(np.median(a))
        metrics._middle_by_buckets = counted
        try:
            got = median_in_place(a.copy())
        finally:
            metrics._middle_by_buckets = real
        assert got == expect or (math.isnan(got) and math.isnan(expect)), case
    assert took > 120  # the buckets served a third and more (the rest: zeros at the middle)


def test_merged_statistics_equal_one_pass_over_every_sample():
    t = load_model(SMALL_INT8).subgraphs[0].tensors[14]
    rng = np.random.default_rng(2)
    parts = [rng.integers(-128, 128, 50).astype(np.int8) for _ in range(4)]
    refs = [rng.normal(0, 3, 50) for _ in range(4)]
    whole, merged = new_stats(t), new_stats(t)
    for q, r in zip(parts, refs):
        whole.add(q, r)
        share = merged.empty()
        share.add(q, r)
        merged.merge(share)
    assert whole.to_dict() == merged.to_dict()


@pytest.mark.parametrize("workers", [1, 2])
def test_meanwhile_runs_once_in_this_process_with_or_without_children(monkeypatch, workers):
    monkeypatch.setattr(parallel, "WORTH_SECONDS", 0.0)
    import os
    calls = []
    got = []
    parallel.map_jobs(list(range(5)), lambda job, here: job + 1,
                      lambda i, r, here: got.append(r), workers=workers,
                      meanwhile=lambda: calls.append(os.getpid()))
    assert calls == [os.getpid()] and got == [1, 2, 3, 4, 5]
    parallel.map_jobs([], lambda job, here: job, lambda i, r, here: None,
                      meanwhile=lambda: calls.append(0))
    assert calls[-1] == 0  # no job: still done


def test_children_started_at_once_give_the_results_in_job_order():
    """``time_first=False`` (jobs known to be long): no job is timed here first; the
    children take shares of every job, and the results still come back in job order."""
    if not parallel.can_fork():
        pytest.skip("forking children is Linux only")
    import os
    parent = os.getpid()
    got = []
    parallel.map_jobs(list(range(6)), lambda job, here: (job * 3, os.getpid() == parent),
                      lambda i, r, here: got.append((i, r[0], r[1] == here)), workers=2,
                      time_first=False)
    assert [(i, v) for i, v, _ in got] == [(i, 3 * i) for i in range(6)]
    assert all(ok for _, _, ok in got)  # ``here`` says where each job ran
    assert parallel.worth_forking_at_once(3 << 20, 10)  # mobilenet_v2's analysis
    assert not parallel.worth_forking_at_once(41_020, 10)  # small_cnn_dilated_int8's


@pytest.mark.parametrize("time_first", [True, False])
def test_processes_sharing_jobs_use_one_blas_thread_each(monkeypatch, time_first):
    """n processes each with BLAS's own n threads oversubscribe n cores (OpenBLAS's idle
    threads spin), and BLAS sums split among threads come out in another order: every job,
    here or in a worker, runs BLAS on one thread, and this process gets its threads back
    afterwards.  Once the workers are started this process takes no job: with the first
    job timed here (``time_first``) it is the only one run here, else none is."""
    if not parallel.can_fork():
        pytest.skip("forking children is Linux only")
    from threadpoolctl import threadpool_info, threadpool_limits
    monkeypatch.setattr(parallel, "WORTH_SECONDS", 0.0)
    import os
    parent = os.getpid()

    def blas_threads() -> list[int]:
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        assert before and max(before) == 2  # (numpy's BLAS, set to two threads)
        got = {}
        parallel.map_jobs(list(range(6)), lambda job, here: (os.getpid(), blas_threads()),
                          lambda i, r, here: got.__setitem__(i, (*r, here)), workers=2,
                          time_first=time_first)
        assert blas_threads() == before
    assert sorted(got) == list(range(6))
    here = [i for i, (pid, _, _) in got.items() if pid == parent]
    assert here == ([0] if time_first else [])
    assert all(is_here == (pid == parent) for pid, _, is_here in got.values())
    assert all(threads == [1] * len(before) for _, threads, _ in got.values())


def test_cancel_stops_the_walk_of_a_sample_and_leaves_the_first_run():
    """Cancel is asked before each op's replacement and each node of the cone's walk:
    the analysis stops there (`Cancelled`), not after the sample's every op, and the
    interpreter's tensors hold the sample's first run."""
    import unittest.mock

    from tflite_viewer.quant import cone as cone_module
    from tflite_viewer.quant.analysis import Cancelled

    asked, walks = [], []
    real = cone_module.DownstreamCone.outputs_many

    def outputs_many(self, ops, baseline, *args, **kwargs):
        walks.append((self, baseline))
        return real(self, ops, baseline, *args, **kwargs)

    def cancel() -> bool:
        asked.append(len(walks))
        return bool(walks) and len(asked) > 80  # well inside the first sample's walk

    with unittest.mock.patch.object(cone_module.DownstreamCone, "outputs_many",
                                    outputs_many), pytest.raises(Cancelled):
        analyze(MNV2_INT8, MNV2_FLOAT, samples=2, per_layer_fallback=True, workers=1,
                cancel=cancel)
    assert len(walks) == 1 and asked.count(1) > 60  # asked all along the one walk
    cone, baseline = walks[0]
    k = cone.subgraph
    for t in cone._sg.tensors:
        if (k, t.index) in baseline and not t.is_constant:
            assert t.data is baseline[(k, t.index)], t.index
