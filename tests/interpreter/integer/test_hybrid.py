"""Hybrid (dynamic-range) CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED: float32
activations with int8 weights, per-tensor and per-channel, through our Interpreter against
LiteRT's reference kernels (BUILTIN_REF).

Hundreds of randomized single-op cases go into a few models (`batch_model` of
tests/interpreter/singleop.py); the same model bytes run in LiteRT and in our
`Interpreter`, so the kernel wiring
(node kind, per-node filter caches) is exercised as well as integer/hybrid.py.  Each
interpreter is invoked twice with different inputs (the second run reuses the prepared
nodes and caches).  Inputs: normal, one-signed, wide-range, all-zero, constant, a zero
batch row, and "grid" data whose scaled values fall exactly on (or one ulp from) rounding
ties of the on-the-fly input quantization.

Every element must satisfy ``|ours - litert| <= TOL * (1 + |litert|)``; in our runs every
case is also bit-exact (the integer accumulators are exact and the float scaling follows
LiteRT's operation order), and at least ``MIN_EXACT`` of the cases must stay bit-exact
so that last-ulp regressions (an input scale rounded differently, say) are caught too.

What LiteRT 2.3.0 accepts, and so what is covered:
* CONV_2D needs its bias tensor (an omitted bias fails Prepare), so "no bias" is checked
  as our model without bias against LiteRT's with a zero bias.  Grouped hybrid conv runs
  (through EvalHybridPerChannel) only with one scale per output channel: a single filter
  scale fails Prepare.  Per-channel scales that are all equal take the per-tensor kernel
  (symmetric input quantization), distinct ones the per-channel kernel (asymmetric).
* DEPTHWISE_CONV_2D hybrid always runs the per-channel kernel, which indexes the scale
  array by output channel; a single scale (quantized_dimension 0) is therefore only
  well-defined with one output channel, and per-tensor weights are tested as equal
  per-channel scales (what the converter writes) plus that one-channel case.
* Weights of -128 (outside the int8 spec's [-127, 127]) appear only where LiteRT's
  kernel multiplies them exactly (per-channel and grouped CONV_2D, DEPTHWISE_CONV_2D).
  The 2.3.0 x86 build's SSE dot product behind per-tensor CONV_2D and FULLY_CONNECTED
  negates a weight as an int8 (-(-128) stays -128) when the quantized input is
  negative; `test_hybrid_fully_connected_weights_minus_128` pins that down.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .gen import ACTIVATIONS
from tests.interpreter.singleop import Op, T, batch_model


#: Elementwise tolerance: |ours - litert| <= TOL * (1 + |litert|).
TOL = 1e-5
#: The fraction of cases (of each op) that must be bit-exact (observed: all of them).
MIN_EXACT = 0.99
ROUNDS = 2  # invocations per interpreter, each with fresh inputs

INPUT_KINDS = ("normal", "normal", "normal", "positive", "negative", "wide", "grid",
               "grid_sym", "zero", "constant", "zero_row")


@dataclass
class Case:
    op: Op
    inputs: list[list[np.ndarray]]  # per round: the op's runtime inputs
    label: str
    kinds: list[str] = field(default_factory=list)


@dataclass
class Stats:
    cases: int = 0
    compared: int = 0  # case x round comparisons
    elements: int = 0
    exact: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst: str = ""

    def __str__(self) -> str:
        return (f"{self.cases} cases x {ROUNDS} runs, {self.elements} values: "
                f"{self.exact}/{self.compared} bit-exact, max |diff| {self.max_abs:.3g}, "
                f"max |diff|/(1+|ref|) {self.max_rel:.3g} {self.worst}")


#: Filled by the tests (printed with -s): op group -> Stats.
STATS: dict[str, Stats] = {}


# ------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------
def _row(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    """One quantization row (one batch) of ``n`` float32 values."""
    if kind == "zero":
        return np.zeros(n, np.float32)
    if kind == "constant":
        return np.full(n, np.float32(rng.choice([-1, 1]) * rng.uniform(0.01, 10)), np.float32)
    if kind == "wide":
        return (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(np.float32)
    if kind in ("grid", "grid_sym") and n >= 2:
        # values on a grid of half-steps of a power-of-two scale s whose range makes the
        # quantizer's scale exactly s: x * (1 / scale) lands on exact .5 ties (and on
        # 0.5 - 2**-25, where rounding the sum x + 0.5 in float32 differs from
        # std::round)
        s = float(2.0 ** rng.integers(-7, 3))
        if kind == "grid":  # asymmetric: [lo, hi] * s spans 255 steps, zero point -128 - lo
            lo = int(rng.integers(-127, 0))
            hi = lo + 255
        else:  # symmetric: max |x| = 127 s
            lo, hi = -127, 127
        v = rng.integers(lo, hi, n) + rng.choice([0.0, 0.5], n)
        near = rng.random(n) < 0.15
        v[near] = rng.choice([-1, 1], int(near.sum())) * (0.5 - 2.0 ** -25)
        v = np.clip(v, lo, hi)
        ends = rng.choice(n, 2, replace=False)
        v[ends[0]] = lo if kind == "grid" else rng.choice([-127, 127])
        if kind == "grid":
            v[ends[1]] = hi
        return (v * s).astype(np.float32)
    x = rng.standard_normal(n) * 10.0 ** rng.uniform(-2, 1.5)
    if kind == "positive":
        x = np.abs(x)
    elif kind == "negative":
        x = -np.abs(x)
    return x.astype(np.float32)


def _data(rng: np.random.Generator, shape, rows: int, kind: str) -> np.ndarray:
    """A float32 tensor of ``shape`` quantized as ``rows`` rows (batches) by the kernel."""
    flat = np.empty((rows, int(np.prod(shape)) // rows), np.float32)
    for r in range(rows):
        k = kind
        if kind == "zero_row":
            k = "zero" if r == rows - 1 else "normal"  # the last batch row all zero
        flat[r] = _row(rng, flat.shape[1], k)
    return flat.reshape(shape)


def _kinds(rng: np.random.Generator, rows: int) -> list[str]:
    kinds = [str(rng.choice(INPUT_KINDS)) for _ in range(ROUNDS)]
    if rows == 1:
        kinds = ["normal" if k == "zero_row" else k for k in kinds]
    return kinds


# ------------------------------------------------------------------------------------------
# filters
# ------------------------------------------------------------------------------------------
def _filter(rng: np.random.Generator, shape, allow_min: bool = True) -> np.ndarray:
    """int8 weights in the spec's [-127, 127]; with ``allow_min`` some -128 too (see the
    module docstring for where LiteRT gets those wrong)."""
    w = rng.integers(-127, 128, size=shape)
    if allow_min and rng.random() < 0.3:
        w[rng.random(w.shape) < 0.2] = -128
    return w.astype(np.int8)


def _scales(rng: np.random.Generator, channels: int, quant: str) -> np.ndarray:
    if quant == "per_channel":
        s = rng.uniform(0.001, 0.05, channels)
        if channels > 1:
            s[1] = s[0] * 1.5  # never all equal
    elif quant == "equal":
        s = np.full(channels, rng.uniform(0.001, 0.05))
    else:
        s = np.array([rng.uniform(0.001, 0.05)])
    return s.astype(np.float32)


def _window(rng, padding: str) -> tuple[int, int, int, int]:
    """(input size, kernel, stride, dilation) along one axis."""
    k, s, d = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
    span = (k - 1) * d + 1
    n = int(rng.integers(span, span + 7)) if padding == "VALID" else int(rng.integers(1, 10))
    return n, k, s, d


def _out(n: int, k: int, s: int, d: int, padding: str) -> int:
    return -(-n // s) if padding == "SAME" else (n - (k - 1) * d - 1) // s + 1


# ------------------------------------------------------------------------------------------
# cases
# ------------------------------------------------------------------------------------------
def _conv_case(rng: np.random.Generator, bias: bool = True) -> Case:
    groups = 1 if rng.random() < 0.75 else int(rng.integers(2, 4))
    quant = str(rng.choice(["per_channel", "per_channel", "per_tensor", "equal"]))
    if groups > 1 and quant == "per_tensor":
        quant = "equal"
    b = int(rng.integers(1, 3))
    cin = groups * int(rng.integers(1, 5))
    cout = groups * int(rng.integers(1, 4))
    padding = str(rng.choice(["SAME", "VALID"]))
    h, kh, sh, dh = _window(rng, padding)
    w, kw, sw, dw = _window(rng, padding)
    shape = (b, h, w, cin)
    out_shape = (b, _out(h, kh, sh, dh, padding), _out(w, kw, sw, dw, padding), cout)
    fs = _scales(rng, cout, quant)
    per_channel_kernel = groups > 1 or bool(np.any(fs != fs[0]))
    f = _filter(rng, (cout, kh, kw, cin // groups), allow_min=per_channel_kernel)
    bias_v = rng.normal(0, 1, cout).astype(np.float32)
    opts = {"padding": padding, "stride_h": sh, "stride_w": sw, "dilation_h_factor": dh,
            "dilation_w_factor": dw, "fused_activation_function": str(rng.choice(ACTIVATIONS))}
    version = 6 if groups > 1 else (5 if fs.size > 1 else 2)
    inputs = [T(shape, np.float32), T.const(f, fs, 0, quantized_dimension=0)]
    if bias:
        inputs.append(T.const(bias_v))
    op = Op("CONV_2D", inputs, [T(out_shape, np.float32)], "Conv2DOptions", opts, version)
    kinds = _kinds(rng, b)
    label = (f"CONV_2D {quant} groups={groups} x{shape} f{f.shape} bias={bias} {opts} "
             f"inputs={kinds}")
    return Case(op, [[_data(rng, shape, b, k)] for k in kinds], label, kinds)


def _depthwise_case(rng: np.random.Generator, bias: bool = True) -> Case:
    b = int(rng.integers(1, 3))
    cin, mult = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    cout = cin * mult
    quant = str(rng.choice(["per_channel", "per_channel", "equal"]))
    if cout == 1 and rng.random() < 0.5:
        quant = "per_tensor"  # one scale, quantized_dimension 0 (filter dim 0 is 1)
    padding = str(rng.choice(["SAME", "VALID"]))
    h, kh, sh, dh = _window(rng, padding)
    w, kw, sw, dw = _window(rng, padding)
    shape = (b, h, w, cin)
    out_shape = (b, _out(h, kh, sh, dh, padding), _out(w, kw, sw, dw, padding), cout)
    f = _filter(rng, (1, kh, kw, cout))
    fs = _scales(rng, cout, quant)
    opts = {"padding": padding, "stride_h": sh, "stride_w": sw, "dilation_h_factor": dh,
            "dilation_w_factor": dw, "depth_multiplier": mult,
            "fused_activation_function": str(rng.choice(ACTIVATIONS))}
    inputs = [T(shape, np.float32),
              T.const(f, fs, 0, quantized_dimension=0 if quant == "per_tensor" else 3)]
    if bias:
        inputs.append(T.const(rng.normal(0, 1, cout).astype(np.float32)))
    op = Op("DEPTHWISE_CONV_2D", inputs, [T(out_shape, np.float32)],
            "DepthwiseConv2DOptions", opts, 6)
    kinds = _kinds(rng, b)
    label = f"DEPTHWISE_CONV_2D {quant} x{shape} f{f.shape} bias={bias} {opts} inputs={kinds}"
    return Case(op, [[_data(rng, shape, b, k)] for k in kinds], label, kinds)


def _fc_case(rng: np.random.Generator) -> Case:
    accum, units = int(rng.integers(1, 41)), int(rng.integers(1, 13))
    rows = int(rng.integers(1, 5))
    keep = bool(rng.integers(0, 2))
    r = rng.random()
    if r < 0.4:
        lead = [rows]
    elif r < 0.7:
        lead = [1, rows] if rows < 4 or rng.random() < 0.5 else [2, 2]
    else:
        lead = [rows, 1] if rng.random() < 0.5 else [1, 1, rows]
    shape = tuple(lead) + (accum,)
    if not keep and rng.random() < 0.2:
        shape = (1, rows * accum)  # flattened into `rows` batches by the weights' depth
    out_shape = shape[:-1] + (units,) if keep else (rows, units)
    quant = str(rng.choice(["per_channel", "per_tensor"]))
    if units == 1:
        quant = "per_tensor"
    asym = bool(rng.integers(0, 2))
    bias = rng.random() < 0.75
    f = _filter(rng, (units, accum), allow_min=False)
    fs = _scales(rng, units, quant)
    opts = {"fused_activation_function": str(rng.choice(ACTIVATIONS)), "keep_num_dims": keep,
            "asymmetric_quantize_inputs": asym}
    version = 12 if quant == "per_channel" else (9 if asym else (5 if keep else 3))
    inputs = [T(shape, np.float32), T.const(f, fs, 0, quantized_dimension=0),
              T.const(rng.normal(0, 1, units).astype(np.float32)) if bias else None]
    op = Op("FULLY_CONNECTED", inputs, [T(out_shape, np.float32)], "FullyConnectedOptions",
            opts, version)
    kinds = _kinds(rng, rows)
    label = f"FULLY_CONNECTED {quant} x{shape} f{f.shape} bias={bias} {opts} inputs={kinds}"
    return Case(op, [[_data(rng, shape, rows, k)] for k in kinds], label, kinds)


# ------------------------------------------------------------------------------------------
# running and comparing
# ------------------------------------------------------------------------------------------
def _run(cases: list[Case], oracle: list[Case] | None = None):
    """Per round, per case: (our output, LiteRT's output).  ``oracle`` (same inputs) is
    the model LiteRT runs when it differs from ours."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

    from tflite_viewer.interpreter import Interpreter

    ours_model = batch_model([c.op for c in cases])
    ref_model = batch_model([c.op for c in oracle]) if oracle is not None else ours_model
    lite = LiteRT(model_content=ref_model.model,
                  experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    lite.allocate_tensors()
    ours = Interpreter(ours_model.model)
    in_details, out_details = lite.get_input_details(), lite.get_output_details()
    results = []
    for rnd in range(ROUNDS):
        flat: list[np.ndarray] = [None] * len(in_details)  # type: ignore[list-item]
        for positions, case in zip(ours_model.inputs, cases):
            for p, a in zip(positions, case.inputs[rnd]):
                flat[p] = a
        for d, a in zip(in_details, flat):
            lite.set_tensor(d["index"], a)
        lite.invoke()
        ref = [lite.get_tensor(d["index"]) for d in out_details]
        got = list(ours.invoke(flat).values())
        results.append([(got[o[0]], ref[r[0]])
                        for o, r in zip(ours_model.outputs, ref_model.outputs)])
    return results


def _check(name: str, cases: list[Case], oracle: list[Case] | None = None) -> Stats:
    st = Stats(cases=len(cases))
    bad = []
    for rnd, pairs in enumerate(_run(cases, oracle)):
        for case, (a, r) in zip(cases, pairs):
            assert a.dtype == np.float32 and r.dtype == np.float32, case.label
            assert a.shape == r.shape, f"{case.label}: shape {a.shape} != LiteRT {r.shape}"
            assert np.all(np.isfinite(r)), case.label
            st.compared += 1
            st.elements += r.size
            if np.array_equal(a, r):
                st.exact += 1
                continue
            diff = np.abs(a.astype(np.float64) - r.astype(np.float64))
            rel = diff / (1.0 + np.abs(r.astype(np.float64)))
            if float(rel.max()) > st.max_rel:
                st.worst = f"({case.label}, run {rnd})"
            st.max_abs = max(st.max_abs, float(diff.max()))
            st.max_rel = max(st.max_rel, float(rel.max()))
            if not np.all(rel <= TOL):
                i = tuple(np.argwhere(rel > TOL)[0])
                bad.append(f"{case.label} run {rnd}: {int((rel > TOL).sum())}/{r.size} "
                           f"outside tolerance, first at {list(i)}: ours {a[i]!r} "
                           f"litert {r[i]!r}")
    STATS[name] = st
    print(f"\n{name}: {st}")
    assert not bad, f"{len(bad)} of {st.compared} runs differ beyond {TOL}:\n" + "\n".join(
        bad[:8])
    assert st.exact >= MIN_EXACT * st.compared, f"{name}: too few bit-exact: {st}"
    return st


# ------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------
def test_hybrid_conv_2d():
    rng = np.random.default_rng(4401)
    cases = [_conv_case(rng) for _ in range(240)]
    kinds = {k for c in cases for k in c.kinds}
    assert {"zero", "constant", "grid", "grid_sym", "zero_row"} <= kinds
    assert {"per_channel", "per_tensor", "equal"} <= {c.label.split()[1] for c in cases}
    _check("CONV_2D", cases)


def test_hybrid_conv_2d_without_bias():
    """Our CONV_2D without a bias tensor equals LiteRT's with a zero bias (LiteRT's
    Prepare insists on the bias)."""
    rng = np.random.default_rng(4402)
    cases = [_conv_case(rng, bias=False) for _ in range(40)]
    oracle = []
    for c in cases:
        cout = c.op.inputs[1].shape[0]
        op = Op(c.op.op, list(c.op.inputs) + [T.const(np.zeros(cout, np.float32))],
                c.op.outputs, c.op.options_type, c.op.options, c.op.version)
        oracle.append(Case(op, c.inputs, c.label))
    _check("CONV_2D no bias", cases, oracle)


def test_hybrid_depthwise_conv_2d():
    rng = np.random.default_rng(4403)
    cases = [_depthwise_case(rng, bias=bool(i % 5)) for i in range(240)]
    assert {"per_channel", "per_tensor", "equal"} <= {c.label.split()[1] for c in cases}
    _check("DEPTHWISE_CONV_2D", cases)


def test_hybrid_fully_connected():
    rng = np.random.default_rng(4404)
    cases = [_fc_case(rng) for _ in range(300)]
    kinds = {k for c in cases for k in c.kinds}
    assert {"zero", "constant", "grid", "grid_sym", "zero_row"} <= kinds
    _check("FULLY_CONNECTED", cases)


def _sse_dot(q: np.ndarray, w: np.ndarray) -> np.ndarray:
    """LiteRT 2.3.0's x86 hybrid dot product q [rows, n] . w [units, n]: on whole blocks of
    16 columns, |q| * sign(q)w with sign(q)w negated in int8 (-(-128) is -128); exact on
    the rest."""
    q, w = q.astype(np.int64), w.astype(np.int64)
    n = q.shape[1] // 16 * 16
    signed = w[None, :, :n] * np.where(q[:, None, :n] < 0, -1, 1)
    signed = np.where(signed == 128, -128, signed)
    return (np.abs(q[:, None, :n]) * signed).sum(-1) + q[:, n:] @ w[:, n:].T


def test_hybrid_fully_connected_weights_minus_128():
    """Weights of -128 are outside the int8 spec ([-127, 127]): we compute their exact
    products; LiteRT 2.3.0's x86 build wraps -(-128) back to -128 in its SSE dot product
    (against negative quantized inputs), per `_sse_dot`.  Both are checked against a
    numpy model of EvalHybridDense, so a LiteRT that gets them right also passes."""
    from tflite_viewer.interpreter.integer import hybrid

    rng = np.random.default_rng(4405)
    cases = []
    for _ in range(40):
        c = _fc_case(rng)
        f = c.op.inputs[1]
        w = rng.integers(-128, 128, size=(f.shape[0], int(rng.integers(16, 49)))).astype(np.int8)
        w[rng.random(w.shape) < 0.2] = -128
        c.op.inputs[1] = T.const(w, f.scale, 0, quantized_dimension=0)
        shape = (c.op.inputs[0].shape[0], w.shape[1])
        c.op.inputs[0] = T(shape, np.float32)
        c.op.options["keep_num_dims"] = False
        c.op.outputs[0] = T((shape[0], w.shape[0]), np.float32)
        c.inputs = [[_data(rng, shape, shape[0], k)] for k in ("normal", "grid")]
        c.label = f"FULLY_CONNECTED x{shape} f{w.shape} {c.op.options}"
        cases.append(c)
    wrapped = 0
    for rnd, pairs in enumerate(_run(cases)):
        for case, (a, r) in zip(cases, pairs):
            x, (_, f, b) = case.inputs[rnd][0], case.op.inputs
            fs = np.atleast_1d(np.asarray(f.scale, np.float32))
            if case.op.options["asymmetric_quantize_inputs"]:
                q, sf, zp = hybrid.asymmetric_quantize(x)
            else:
                (q, sf), zp = hybrid.symmetric_quantize(x), np.zeros(len(x), np.int64)
            scale = (sf[:, None] * fs[None, :] if fs.size > 1
                     else (sf * fs[0])[:, None] * np.ones((1, f.shape[0]), np.float32))
            row_sums = f.data.astype(np.int64).sum(1)
            lo, hi = {"NONE": (-np.inf, np.inf), "RELU": (0, np.inf), "RELU6": (0, 6),
                      "RELU_N1_TO_1": (-1, 1)}[case.op.options["fused_activation_function"]]

            def model(dot):
                acc = (dot - zp[:, None] * row_sums[None, :]).astype(np.float32)
                out = np.zeros(acc.shape, np.float32) if b is None else b.data[None, :]
                out = (out + acc * scale.astype(np.float32)).astype(np.float32)
                return np.clip(out, lo, hi).astype(np.float32)

            exact = model(q.astype(np.int64) @ f.data.astype(np.int64).T)
            sse = model(_sse_dot(q, f.data))
            assert np.array_equal(a, exact), case.label
            assert np.array_equal(r, sse) or np.array_equal(r, exact), case.label
            wrapped += not np.array_equal(sse, exact)
    print(f"\nFULLY_CONNECTED with -128 weights: LiteRT's SSE wrap changes {wrapped} of "
          f"{2 * len(cases)} runs")
    assert wrapped > 0
