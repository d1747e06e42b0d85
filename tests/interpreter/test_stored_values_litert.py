"""Per-channel and blockwise activations of the ops that compute on stored integers
(stored_values.py, issue 42's refusal audit), and the int16 ADD without parameters.

LiteRT's kernels for these ops read no per-channel scale: the result has meaning only
where the values the op pairs carry the same parameters.  There it runs here, equal to
LiteRT's builtin kernels bit for bit, and `litert_meaning.judge` confirms LiteRT computes
it with meaning (so the acceptance is no silent wrong result); where the parameters
differ it is refused here saying LiteRT computes it without meaning, and the judge finds
LiteRT's result wrong (so the refusal is no false one).  The models go beyond the audit's
(per channel on the concatenated axis, keep_dims, an ABS whose output scales are its
input's times one factor)."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, UnsupportedOpError

from .litert_meaning import judge, run_forked
from .llm_models import A, Blockwise, OpSpec, PerChannel, PerTensor, W, ours_run, write_model
from .refusal_audit_models import SIMPLE_OPS, with_form
from . import op_type_models as simple

_NP = {"INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16}
_ZP = {"INT8": 3, "UINT8": 128, "INT16": 0}
SCALES = [0.02, 0.05, 0.03, 0.08]


def _values(rng, tname: str, shape) -> np.ndarray:
    info = np.iinfo(_NP[tname])
    lo, hi = (max(info.min, -120), min(info.max, 120)) if tname != "UINT8" else (10, 250)
    return rng.integers(lo, hi, shape).astype(_NP[tname])


def _pc(scales, zp, axis) -> PerChannel:
    return PerChannel(list(scales), zp, axis)


def _model(op: str, tensors, ins, outs, runtime, options_type=None, options=None) -> bytes:
    return write_model(tensors, [OpSpec(op, ins, outs, options_type, options)], runtime, outs)


def _binary(op, tname, out_quant=None, y_quant=None, zp=None):
    """op(x [2,3,4], y [4]) per channel on the last axis (y on its only axis)."""
    zp = _ZP[tname] if zp is None else zp
    q = _pc(SCALES, zp, 2)
    out_type = "BOOL" if op in ("LESS", "GREATER_EQUAL") else tname
    out_q = None if out_type == "BOOL" else (out_quant or q)
    return _model(op, [A((2, 3, 4), tname, q), A((4,), tname, y_quant or _pc(SCALES, zp, 0)),
                       A((2, 3, 4), out_type, out_q)], [0, 1], [2], [0, 1])


def _unary(op, tname, out_quant=None, zp=0):
    q = _pc(SCALES[:2], zp, 0)
    return _model(op, [A((2, 3, 4), tname, q), A((2, 3, 4), tname, out_quant or q)],
                  [0], [1], [0])


def _reduce(op, tname, keep: bool, axis_quant=0):
    """REDUCE over axis 1 of [2,3,4], per channel on axis ``axis_quant`` of the input."""
    n = (2, 3, 4)[axis_quant]
    q = _pc(SCALES[:n] if n <= 4 else SCALES, _ZP[tname], axis_quant)
    out_shape = (2, 1, 4) if keep else (2, 4)
    out_axis = axis_quant if keep or axis_quant == 0 else axis_quant - 1
    out_q = _pc(SCALES[:n], _ZP[tname], out_axis) if axis_quant != 1 \
        else _pc(SCALES[:2], _ZP[tname], 0)
    if op.startswith("ARG"):
        out = A(out_shape[:1] + out_shape[2:] if keep else out_shape, "INT32")
        return _model(op, [A((2, 3, 4), tname, q), W(np.array([1], np.int32)), out],
                      [0, 1], [2], [0], f"{op.title().replace('_', '')}Options",
                      {"output_type": "INT32"})
    return _model(op, [A((2, 3, 4), tname, q), W(np.array([1], np.int32)),
                       A(out_shape, tname, out_q)], [0, 1], [2], [0], "ReducerOptions",
                  {"keep_dims": keep})


def _concat(tname, out_scales=None):
    """CONCATENATION of [2,2,4] and [2,3,4] on axis 1, per channel on that axis: the
    output's scales are the inputs' one after the other."""
    zp = _ZP[tname]
    a, b = [0.02, 0.05], [0.03, 0.08, 0.04]
    out = out_scales or a + b
    return _model("CONCATENATION", [A((2, 2, 4), tname, _pc(a, zp, 1)),
                                    A((2, 3, 4), tname, _pc(b, zp, 1)),
                                    A((2, 5, 4), tname, _pc(out, zp, 1))],
                  [0, 1], [2], [0, 1], "ConcatenationOptions", {"axis": 1})


def _inputs(model: bytes, rng) -> list[np.ndarray]:
    from tflite_viewer.model import load_model
    sg = load_model(model).subgraphs[0]
    return [_values(rng, sg.tensors[i].type_name, tuple(sg.tensors[i].shape))
            for i in sg.inputs]


MEANINGFUL = {
    **{f"{op} {t}": (lambda op=op, t=t: _binary(op, t)) for op in ("MAXIMUM", "MINIMUM")
       for t in ("INT8", "UINT8", "INT16")},
    "FLOOR_MOD INT16": lambda: _binary("FLOOR_MOD", "INT16"),
    "LESS INT16": lambda: _binary("LESS", "INT16"),
    "GREATER_EQUAL INT16": lambda: _binary("GREATER_EQUAL", "INT16"),
    "NEG INT8": lambda: _unary("NEG", "INT8"),
    "NEG INT16": lambda: _unary("NEG", "INT16"),
    # ABS reads the first channel's scales: output scales twice the input's keep the ratio
    "ABS INT8 ratio": lambda: _unary("ABS", "INT8", _pc([2 * s for s in SCALES[:2]], 5, 0), 5),
    "ABS INT16 ratio": lambda: _unary("ABS", "INT16", _pc([2 * s for s in SCALES[:2]], 0, 0)),
    **{f"{op} {t} keep={keep}": (lambda op=op, t=t, keep=keep: _reduce(op, t, keep, 2))
       for op in ("REDUCE_MAX", "REDUCE_MIN") for t in ("INT8", "UINT8", "INT16")
       for keep in (False, True)},
    **{f"{op} {t}": (lambda op=op, t=t: _reduce(op, t, False, 0))
       for op in ("ARG_MAX", "ARG_MIN") for t in ("INT8", "UINT8")},
    **{f"CONCATENATION {t}": (lambda t=t: _concat(t)) for t in ("INT8", "UINT8", "INT16")},
}


@pytest.mark.parametrize("name", sorted(MEANINGFUL))
def test_pairing_parameters_run_as_litert(name):
    model = MEANINGFUL[name]()
    rng = np.random.default_rng(7)
    inputs = _inputs(model, rng)
    if name.startswith("FLOOR_MOD"):
        inputs[1] = np.where(inputs[1] == 0, 7, inputs[1]).astype(inputs[1].dtype)
    ours = ours_run(model, inputs)
    theirs = run_forked(model, inputs)
    for o, value in ours.items():
        np.testing.assert_array_equal(value, theirs[o])
    assert judge(model, inputs, theirs).status == "runs", name


DIFFERING = {
    "MAXIMUM INT8": lambda: _binary("MAXIMUM", "INT8", y_quant=_pc([0.02, 0.1, 0.03, 0.08], 3, 0)),
    "LESS INT16": lambda: _binary("LESS", "INT16", y_quant=_pc([0.02, 0.15, 0.03, 0.2], 0, 0)),
    "NEG INT8 zero point": lambda: _unary("NEG", "INT8", zp=20),
    "ABS INT8 ratio": lambda: _unary("ABS", "INT8", _pc([0.02, 0.2], 0, 0)),
    "REDUCE_MAX INT8 reduced axis": lambda: _reduce("REDUCE_MAX", "INT8", False, 1),
    "ARG_MAX INT8 reduced axis": lambda: _reduce("ARG_MAX", "INT8", False, 1),
    "CONCATENATION INT16 order": lambda: _concat("INT16", [0.03, 0.08, 0.04, 0.02, 0.05]),
}


@pytest.mark.parametrize("name", sorted(DIFFERING))
def test_differing_parameters_are_refused_where_litert_is_wrong(name):
    model = DIFFERING[name]()
    with pytest.raises(UnsupportedOpError, match="without meaning"):
        Interpreter(model)
    verdicts = [judge(model, _inputs(model, np.random.default_rng(seed))).status
                for seed in range(3)]
    assert "wrong" in verdicts, (name, verdicts)


def test_per_channel_concat_into_a_per_tensor_output_is_refused_as_litert_does():
    """int8: LiteRT's Prepare compares the per-tensor parameters (0 for a per-channel
    input) and fails; refused here too, saying why."""
    model = _model("CONCATENATION", [A((2, 2, 4), "INT8", _pc([0.05, 0.05], 3, 1)),
                                     A((2, 3, 4), "INT8", PerTensor(0.05, 3)),
                                     A((2, 5, 4), "INT8", PerTensor(0.05, 3))],
                   [0, 1], [2], [0, 1], "ConcatenationOptions", {"axis": 1})
    with pytest.raises(UnsupportedOpError, match="per-tensor parameters"):
        Interpreter(model)
    assert judge(model, _inputs(model, np.random.default_rng(0))).status == "refuses"


def test_blockwise_negation_runs_as_litert():
    scales = np.array([[0.02, 0.05], [0.03, 0.08]], np.float16)
    q = Blockwise(2, 2)
    model = write_model([A((2, 4), "INT16", q), A((2, 4), "INT16", q), W(scales)],
                        [OpSpec("NEG", [0], [1])], [0], [1])
    x = _values(np.random.default_rng(1), "INT16", (2, 4))
    np.testing.assert_array_equal(ours_run(model, [x])[1], run_forked(model, [x])[1])


# -- the int16 ADD without parameters --------------------------------------------------
@pytest.mark.parametrize("act", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
@pytest.mark.parametrize("resolver", ["BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF"])
def test_plain_int16_add_wraps_then_clamps_as_litert(act, resolver):
    """add.cc's EvalAdd: int16 + int16 wraps around (30000 + 10000 = -25536), then the
    fused activation clamps, as ActivationFunctionWithMinMax<int16_t>(a + b)."""
    model = _model("ADD", [A((2, 3, 4), "INT16"), A((4,), "INT16"), A((2, 3, 4), "INT16")],
                   [0, 1], [2], [0, 1], "AddOptions", {"fused_activation_function": act})
    rng = np.random.default_rng(3)
    x = rng.integers(-32768, 32768, (2, 3, 4)).astype(np.int16)
    y = rng.integers(-32768, 32768, (4,)).astype(np.int16)
    x[0, 0, :2], y[:2] = 30000, 10000
    ours = ours_run(model, [x, y])[2]
    np.testing.assert_array_equal(ours, run_forked(model, [x, y], resolver)[2])
    if act == "NONE":
        assert ours[0, 0, 0] == -25536


def test_int16_add_mixing_plain_and_quantized_tensors_is_refused():
    model = _model("ADD", [A((4,), "INT16", PerTensor(0.001)), A((4,), "INT16"),
                           A((4,), "INT16")], [0, 1], [2], [0, 1], "AddOptions", {})
    with pytest.raises(UnsupportedOpError, match="with and without quantization"):
        Interpreter(model)


# -- no kernel divides by a missing scale ------------------------------------------------
@pytest.mark.parametrize("tname", ["INT8", "UINT8", "INT16"])
def test_no_kernel_fails_on_missing_parameters_with_a_raw_arithmetic_error(tname):
    """Every simple op with INT8, UINT8 or INT16 tensors without parameters either loads
    and runs, or is refused with a readable reason: never a ZeroDivisionError or an
    OverflowError from computing with a scale that is not there (ADD, SUB, DIV,
    SQUARED_DIFFERENCE, LOG_SOFTMAX and RELU_N1_TO_1 did)."""
    rng = np.random.default_rng(0)
    raw = []
    for op in SIMPLE_OPS:
        model, inputs = simple.build(op, tname, rng)
        model = with_form(model, tname, "none")
        try:
            interp = Interpreter(model)
        except UnsupportedOpError as exc:
            message = str(exc)
        except Exception as exc:  # noqa: BLE001 - an ExecutionError says why prepare failed
            message = f"{type(exc).__name__}: {exc}"
        else:
            interp.set_inputs(inputs)
            try:
                interp.invoke()
                continue
            except Exception as exc:  # noqa: BLE001
                message = f"{type(exc).__name__}: {exc}"
        if "ZeroDivisionError" in message or "OverflowError" in message:
            raw.append(f"{op}: {message[:160]}")
    assert not raw, "\n".join(raw)
