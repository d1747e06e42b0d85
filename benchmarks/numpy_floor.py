"""How close any numpy interpreter can come to LiteRT on the smallest corpus models.

Issue 17 asks every corpus model to run at or below 1.0x LiteRT's reference kernels
(BUILTIN_REF), none above 2x.  On the smallest models LiteRT's whole invoke takes about
a microsecond, and one numpy call costs a few tenths of one.  This benchmark measures that
floor: for each model below, the least numpy a program computing that model's outputs
needs, written out by hand from the model's own constants (no interpreter: no Python
per operator, no checks, no copies, the scalars of a loop in Python ints), checked
against LiteRT's outputs, then timed against LiteRT's invoke, the two alternating one
call each in this process as `bench_interpreter.py` does.  A ratio above 1.0 here means
no interpreter built on numpy calls can meet 1.0x on that model; above 2.0, not even 2x.

    python benchmarks/numpy_floor.py [--runs N] [--rounds R] [--blas-threads N]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import blas_threads  # noqa: E402

blas_threads.apply_from_argv()  # before numpy loads its BLAS

import numpy as np  # noqa: E402

from benchmarks.bench_interpreter import (  # noqa: E402
    alternating_times, litert_interpreter, median_time, prepared)
from tflite_viewer.interpreter import Interpreter  # noqa: E402

Program = Callable[[list[np.ndarray]], np.ndarray]


def _constant(interp: Interpreter, subgraph: int, node: int, k: int) -> np.ndarray:
    """Input ``k`` of operator ``node``: a constant the model stores."""
    sg = interp.subgraphs[subgraph]
    data = sg.tensors[sg.nodes[node].inputs[k]].data
    assert data is not None, f"subgraph {subgraph} op {node} input {k} is not a constant"
    return np.asarray(data)


def sine_float(interp: Interpreter) -> tuple[Program, int]:
    """Three FULLY_CONNECTED (1 -> 16 -> 16 -> 1), RELU on the first two: per layer a
    product, a bias add and a clamp, 8 numpy calls."""
    (w1, b1), (w2, b2), (w3, b3) = [
        (np.ascontiguousarray(_constant(interp, 0, n, 1).T), _constant(interp, 0, n, 2))
        for n in range(3)]

    def run(inputs):
        h = inputs[0] @ w1
        h += b1
        np.maximum(h, 0, out=h)
        h2 = h @ w2
        h2 += b2
        np.maximum(h2, 0, out=h2)
        y = h2 @ w3
        y += b3
        return y
    return run, 8


def multi_signature(interp: Interpreter) -> tuple[Program, int]:
    """FULLY_CONNECTED (no bias) then LOGISTIC, 1 / (1 + exp(-x)): 5 numpy calls."""
    w = np.ascontiguousarray(_constant(interp, 0, 0, 1).T)
    one = np.float32(1)

    def run(inputs):
        y = inputs[0] @ w
        np.negative(y, out=y)
        np.exp(y, out=y)
        np.add(one, y, out=y)
        return np.divide(one, y, out=y)
    return run, 5


def control_flow(interp: Interpreter) -> tuple[Program, int]:
    """WHILE i < n: i += 1, x = tanh(x * a + b); then x * m if sum(x) > g, else x - s.  Its
    counter in Python ints; per iteration a multiply, an add and a tanh; then a sum and
    one more: 11 numpy calls for the benchmark's n = 3."""
    a, b = _constant(interp, 4, 1, 1), _constant(interp, 4, 2, 1)
    step = int(_constant(interp, 4, 0, 1))
    start = int(_constant(interp, 0, 0, 0))
    g = _constant(interp, 0, 2, 1)
    m, s = _constant(interp, 2, 0, 1), _constant(interp, 1, 0, 1)

    def run(inputs):
        x, n = inputs[0], int(inputs[1])
        i = start
        while i < n:
            i += step
            x = x * a
            x += b
            np.tanh(x, out=x)
        return x * m if np.add.reduce(x) > g else x - s
    return run, 11


def trained_lstm(interp: Interpreter) -> tuple[Program, int]:
    """UNIDIRECTIONAL_SEQUENCE_LSTM (28 steps, 20 units, no peephole, projection or layer
    norm; a cell clip), RESHAPE, FULLY_CONNECTED, SOFTMAX.  All 28 input products and the
    gate biases in one product and one add; per step the recurrent product and its add,
    the four gates' logistic in four calls on one row, the cell's tanh, the new cell
    (three calls) and its clip (two), its tanh and the output gate, the row stored: 15
    calls; then the classifier's product, bias and a softmax of five."""
    node = interp.subgraphs[0].nodes[0]
    opts = node.builtin_data
    assert not opts.get("proj_clip")
    clip = np.float32(opts.get("cell_clip") or 0)
    assert clip > 0
    assert opts.get("fused_activation_function") in ("TANH", None)
    assert all(i < 0 for i in node.inputs[9:12]) and all(i < 0 for i in node.inputs[16:18])
    wx = np.concatenate([_constant(interp, 0, 0, k) for k in range(1, 5)]).T.copy()
    wh = np.concatenate([_constant(interp, 0, 0, k) for k in range(5, 9)]).T.copy()
    bias = np.concatenate([_constant(interp, 0, 0, k) for k in range(12, 16)])
    w_fc, b_fc = np.ascontiguousarray(_constant(interp, 0, 2, 1).T), _constant(interp, 0, 2, 2)
    u = wh.shape[0]
    one = np.float32(1)

    def run(inputs):
        x = inputs[0][0]
        steps = x.shape[0]
        xp = x @ wx
        xp += bias
        h = np.zeros((1, u), np.float32)
        c = np.zeros((1, u), np.float32)
        out = np.empty((steps, u), np.float32)
        s = np.empty((1, 4 * u), np.float32)
        s_i, s_f, s_o = s[:, :u], s[:, u:2 * u], s[:, 3 * u:]
        for t in range(steps):
            z = h @ wh
            z += xp[t]
            np.negative(z, out=s)
            np.exp(s, out=s)
            np.add(one, s, out=s)
            np.divide(one, s, out=s)
            g = np.tanh(z[:, 2 * u:3 * u])
            c = s_f * c
            c += s_i * g
            np.minimum(np.maximum(c, -clip, out=c), clip, out=c)
            h = np.tanh(c)
            h *= s_o
            out[t] = h[0]
        y = out.reshape(1, -1) @ w_fc
        y += b_fc
        y -= np.maximum.reduce(y, axis=-1, keepdims=True)
        np.exp(y, out=y)
        y /= np.add.reduce(y, axis=-1, keepdims=True)
        return y
    return run, 2 + 15 * 28 + 2 + 5


PROGRAMS = {"sine_float": sine_float, "multi_signature": multi_signature,
            "control_flow": control_flow, "trained_lstm": trained_lstm}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(PROGRAMS))
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--blas-threads", type=int, default=None)
    args = ap.parse_args(argv)
    print(f"{'model':18s} {'numpy calls':>11s} {'numpy us':>9s} {'REF us':>8s} "
          f"{'numpy/REF':>9s} {'ours us':>8s} {'ours/REF':>8s}")
    for name in args.models:
        path, inputs, interp = prepared(name)
        program, calls = PROGRAMS[name](interp)
        li = litert_interpreter(path.read_bytes(), inputs)
        li.invoke()  # its first run, from the initial state (trained_lstm's is a variable)
        want = li.get_tensor(li.get_output_details()[0]["index"])
        got = program(inputs)
        if not np.allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-6):
            print(f"{name}: the numpy program disagrees with LiteRT "
                  f"(max |diff| {np.abs(got.reshape(want.shape) - want).max():.3g})")
            return 1
        rounds = [alternating_times(lambda: program(inputs), li.invoke, args.runs)
                  for _ in range(args.rounds)]
        floor, ref = min(r[0] for r in rounds), min(r[1] for r in rounds)
        ours = min(median_time(interp.invoke, max(3, args.runs // 10)) for _ in range(args.rounds))
        print(f"{name:18s} {calls:11d} {floor * 1e6:9.2f} {ref * 1e6:8.2f} {floor / ref:9.2f} "
              f"{ours * 1e6:8.2f} {ours / ref:8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
