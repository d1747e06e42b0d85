"""Hybrid UNIDIRECTIONAL_SEQUENCE_LSTM (float32 input and states, int8 weights) against
LiteRT: hundreds of random single-op cases batched into a few models, every output and
final state compared.

What the random cases cover: batch 1-3, time 1-5, input 1-12, cell 1-10, output 1-10
with projection; time-major both ways; CIFG, peephole, projection (with and without bias),
layer normalization, cell and projection clipping, symmetric and asymmetric input
quantization each on or off; every activation the LSTM options can name (NONE, RELU,
RELU_N1_TO_1, RELU6, TANH, SIGN_BIT); all-zero time steps (LiteRT skips their products).

Tolerance: integer/hybrid_lstm.py reproduces the activations' quantization (the NEON
quantizers LiteRT's x86 build runs) and Eigen's sigmoid and tanh, so nearly every case is
bit-exact; the others differ by an ulp now and then (the C library's expf vs a float64 exp
rounded to float32).  Asserted: every value within 1e-6 * (1 + |litert|), and at least
97% of the cases bit-exact (measured: 99.8%).  LiteRT's reference and optimized resolvers
give identical values (the LSTM kernel is the same), also asserted.
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.interpreter.integer import hybrid

from tests.interpreter.singleop import Op, T, batch_model

ACTIVATIONS = ["TANH", "RELU", "RELU6", "RELU_N1_TO_1", "NONE", "SIGN_BIT"]
GATES = {"i": (1, 5, 12), "f": (2, 6, 13), "c": (3, 7, 14), "o": (4, 8, 15)}
PEEPHOLES = {"i": 9, "f": 10, "o": 11}
LAYER_NORMS = {"i": 20, "f": 21, "c": 22, "o": 23}
OPTIONS = "UnidirectionalSequenceLSTMOptions"


def _f32(v) -> float:
    return float(np.float32(v))


def _config(rng: np.random.Generator, **force) -> dict:
    cfg = dict(batch=int(rng.integers(1, 4)), time=int(rng.integers(1, 6)),
               n_input=int(rng.integers(1, 13)), n_cell=int(rng.integers(1, 11)),
               time_major=bool(rng.integers(2)), cifg=bool(rng.integers(2)),
               peephole=bool(rng.integers(2)), proj=bool(rng.integers(2)),
               proj_bias=bool(rng.integers(2)), ln=bool(rng.integers(2)),
               asym=bool(rng.integers(2)), act=ACTIVATIONS[int(rng.integers(len(ACTIVATIONS)))],
               cell_clip=_f32(rng.uniform(0.3, 3)) if rng.random() < 0.4 else 0.0,
               proj_clip=_f32(rng.uniform(0.2, 2)) if rng.random() < 0.4 else 0.0)
    cfg["n_output"] = int(rng.integers(1, 11)) if cfg["proj"] else cfg["n_cell"]
    cfg.update(force)
    return cfg


def _lstm_op(rng: np.random.Generator, cfg: dict, version: int = 2) -> Op:
    """A hybrid LSTM: int8 weights with per-tensor scales near 1 / (127 sqrt(fan-in)), so
    the gates' pre-activations are of order 1."""
    n_in, n_cell, n_out = cfg["n_input"], cfg["n_cell"], cfg["n_output"]

    def weights(rows, cols):
        scale = _f32(rng.uniform(0.5, 2.0) / (127 * np.sqrt(cols)))
        return T.const(rng.integers(-127, 128, size=(rows, cols)).astype(np.int8), scale, 0)

    def floats(n, lo=-0.5, hi=0.5):
        return T.const(rng.uniform(lo, hi, n).astype(np.float32))

    ins: list[T | None] = [None] * 24
    x_shape = ((cfg["time"], cfg["batch"], n_in) if cfg["time_major"]
               else (cfg["batch"], cfg["time"], n_in))
    ins[0] = T(x_shape, np.float32)
    for g, (kx, kh, kb) in GATES.items():
        if g == "i" and cfg["cifg"]:
            continue
        ins[kx], ins[kh], ins[kb] = weights(n_cell, n_in), weights(n_cell, n_out), floats(n_cell)
        if cfg["peephole"] and g in PEEPHOLES:
            ins[PEEPHOLES[g]] = T.const(rng.integers(-127, 128, size=n_cell).astype(np.int8),
                                        _f32(rng.uniform(0.002, 0.01)), 0)
        if cfg["ln"]:
            ins[LAYER_NORMS[g]] = floats(n_cell, 0.5, 1.5)
    if cfg["proj"]:
        ins[16] = weights(n_out, n_cell)
        if cfg["proj_bias"]:
            ins[17] = floats(n_out)
    ins[18] = T((cfg["batch"], n_out), np.float32, variable=True)
    ins[19] = T((cfg["batch"], n_cell), np.float32, variable=True)
    return Op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [T(x_shape[:2] + (n_out,), np.float32)],
              OPTIONS, dict(fused_activation_function=cfg["act"], cell_clip=cfg["cell_clip"],
                            proj_clip=cfg["proj_clip"], time_major=cfg["time_major"],
                            asymmetric_quantize_inputs=cfg["asym"]), version)


def _input(rng: np.random.Generator, op: Op, cfg: dict) -> np.ndarray:
    x = rng.normal(0, 1, op.inputs[0].shape).astype(np.float32)
    if rng.random() < 0.2:  # an all-zero time step: LiteRT skips the input products
        t = int(rng.integers(cfg["time"]))
        if cfg["time_major"]:
            x[t] = 0
        else:
            x[:, t] = 0
    return x


def _state_names(k: int) -> tuple[str, str]:
    return f"op{k}_in18", f"op{k}_in19"


class _LiteRT:
    """A LiteRT interpreter on a built model; reads outputs and variable tensors by name."""

    def __init__(self, model: bytes, resolver: str):
        from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

        self.it = LiteRT(model_content=model,
                         experimental_op_resolver_type=getattr(OpResolverType, resolver))
        self.it.allocate_tensors()
        self.by_name = {d["name"]: d["index"] for d in self.it.get_tensor_details()}

    def run(self, inputs) -> list[np.ndarray]:
        for d, x in zip(self.it.get_input_details(), inputs):
            self.it.set_tensor(d["index"], x)
        self.it.invoke()
        return [self.it.get_tensor(d["index"]) for d in self.it.get_output_details()]

    def tensor(self, name: str) -> np.ndarray:
        return self.it.get_tensor(self.by_name[name])


def _close(ours: np.ndarray, ref: np.ndarray) -> bool:
    return ours.dtype == ref.dtype and ours.shape == ref.shape and bool(
        np.all(np.abs(ours.astype(np.float64) - ref) <= 1e-6 * (1 + np.abs(ref))))


@pytest.mark.parametrize("seed", range(3))
def test_random_hybrid_lstms_match_litert(seed):
    rng = np.random.default_rng(4200 + seed)
    cfgs = [_config(rng) for _ in range(200)]
    ops = [_lstm_op(rng, c) for c in cfgs]
    xs = [_input(rng, op, c) for op, c in zip(ops, cfgs)]
    built = batch_model(ops)
    ref_rt = _LiteRT(built.model, "BUILTIN_REF")
    opt_rt = _LiteRT(built.model, "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    ref, opt = ref_rt.run(xs), opt_rt.run(xs)
    ours_rt = Interpreter(built.model)
    ours = list(ours_rt.invoke(xs).values())
    by_name = {t.name: t.index for t in ours_rt.subgraphs[0].tensors}
    exact = 0
    for k, cfg in enumerate(cfgs):
        label = f"case {k} {cfg}"
        np.testing.assert_array_equal(opt[k], ref[k], err_msg=f"LiteRT resolvers differ: {label}")
        pairs = [(ours[k], ref[k])] + [
            (ours_rt.tensor(0, by_name[name]), ref_rt.tensor(name)) for name in _state_names(k)]
        for j, (a, r) in enumerate(pairs):
            assert _close(a, r), (f"{label} {['output', 'output state', 'cell state'][j]}: "
                                  f"max |diff| {np.abs(a.astype(np.float64) - r).max()}")
        exact += all(np.array_equal(a, r) for a, r in pairs)
    assert exact >= 0.97 * len(cfgs), f"only {exact} of {len(cfgs)} cases bit-exact"


def test_every_feature_combination_at_the_edges_matches_litert():
    """The 2**7 on/off combinations of CIFG, peephole, projection, layer norm, asymmetric
    quantization, clipping and time-major, on sizes whose quantized rows straddle the
    8-value NEON blocks and whose gates straddle Eigen's 4-float packets."""
    rng = np.random.default_rng(77)
    cfgs = []
    for bits in range(128):
        cifg, peep, proj, ln, asym, clip, tm = (bool(bits >> i & 1) for i in range(7))
        n_cell = int(rng.integers(3, 10))
        cfgs.append(_config(rng, cifg=cifg, peephole=peep, proj=proj, ln=ln, asym=asym,
                            time_major=tm, time=3, n_input=int(rng.integers(7, 20)),
                            n_cell=n_cell,
                            n_output=int(rng.integers(3, 10)) if proj else n_cell,
                            cell_clip=0.6 if clip else 0.0, proj_clip=0.5 if clip else 0.0,
                            act=ACTIVATIONS[bits % len(ACTIVATIONS)]))
    ops = [_lstm_op(rng, c) for c in cfgs]
    xs = [_input(rng, op, c) for op, c in zip(ops, cfgs)]
    xs[0][...] = 0  # a sequence of zeros: every input product skipped
    built = batch_model(ops)
    ref = _LiteRT(built.model, "BUILTIN_REF").run(xs)
    ours = list(Interpreter(built.model).invoke(xs).values())
    exact = 0
    for k, cfg in enumerate(cfgs):
        assert _close(ours[k], ref[k]), (f"case {k} {cfg}: max |diff| "
                                         f"{np.abs(ours[k].astype(np.float64) - ref[k]).max()}")
        exact += np.array_equal(ours[k], ref[k])
    assert exact >= 0.97 * len(cfgs), f"only {exact} of {len(cfgs)} cases bit-exact"


def test_states_carry_over_invocations_like_litert_variables():
    """Four invocations of two LSTMs (one time-major, one batch-major, asymmetric): the
    outputs and the float state tensors follow LiteRT's each time, and after
    reset_variables (LiteRT: reset_all_variables) both start again from zero."""
    rng = np.random.default_rng(5)
    cfgs = [_config(rng, batch=2, time=3, n_input=9, n_cell=6, n_output=4, proj=True,
                    proj_bias=True, peephole=True, cifg=False, ln=True, asym=False,
                    time_major=True, act="TANH", cell_clip=0.0, proj_clip=0.0),
            _config(rng, batch=3, time=2, n_input=5, n_cell=7, n_output=7, proj=False,
                    peephole=False, cifg=True, ln=False, asym=True, time_major=False,
                    act="TANH", cell_clip=1.0, proj_clip=0.0)]
    ops = [_lstm_op(rng, c) for c in cfgs]
    built = batch_model(ops)
    lite = _LiteRT(built.model, "BUILTIN_REF")
    ours = Interpreter(built.model)
    by_name = {t.name: t.index for t in ours.subgraphs[0].tensors}
    xs0 = [_input(rng, op, c) for op, c in zip(ops, cfgs)]
    xs1 = [_input(rng, op, c) for op, c in zip(ops, cfgs)]
    outs = []
    for step, xs in enumerate([xs0, xs1, xs0, "reset", xs0]):
        if isinstance(xs, str):
            lite.it.reset_all_variables()
            ours.reset_variables()
            continue
        ref = lite.run(xs)
        got = list(ours.invoke(xs).values())
        for k in range(len(ops)):
            assert _close(got[k], ref[k]), f"invoke {step} op {k}"
            for name in _state_names(k):
                state = ours.tensor(0, by_name[name])
                assert _close(state, lite.tensor(name)), f"invoke {step} {name}"
                assert np.any(state != 0), f"invoke {step} {name} stayed zero"
        outs.append(got)
    for k in range(len(ops)):
        # the same input after two invocations: the carried states change the outputs
        assert not np.allclose(outs[2][k], outs[0][k], atol=1e-3), f"op {k} kept no state"
        # after the reset: the first invocation again, exactly
        np.testing.assert_array_equal(outs[3][k], outs[0][k])


def test_activation_none_outputs_output_gate_times_cell_gate():
    """LiteRT's quirk, reproduced: with activation NONE the output is o * g (the cell
    gate's scratch is never overwritten), not o * c.  One step from zero states, no
    recurrence: compare with both formulas computed from the gates by hand."""
    rng = np.random.default_rng(11)
    cfg = _config(rng, batch=2, time=1, n_input=4, n_cell=5, n_output=5, proj=False,
                  cifg=False, peephole=False, ln=False, asym=False, time_major=True,
                  act="NONE", cell_clip=0.0, proj_clip=0.0)
    op = _lstm_op(rng, cfg)
    x = rng.normal(0, 1, op.inputs[0].shape).astype(np.float32)
    ref = _LiteRT(batch_model([op]).model, "BUILTIN_REF").run([x])[0][0]
    q, sf = hybrid.symmetric_quantize(x[0])

    def pre(g):
        kx, _, kb = GATES[g]
        w = op.inputs[kx]
        dot = q.astype(np.int64) @ w.data.astype(np.int64).T
        return op.inputs[kb].data + dot.astype(np.float32) * (sf * np.float32(w.scale))[:, None]

    i, f, o = (1 / (1 + np.exp(-pre(g).astype(np.float64))) for g in "ifo")
    g = pre("c").astype(np.float64)
    np.testing.assert_allclose(ref, o * g, rtol=1e-5, atol=1e-6)
    assert not np.allclose(ref, o * (i * g), rtol=1e-3, atol=1e-4)


def _refused(op: Op) -> str:
    with pytest.raises(UnsupportedOpError) as err:
        Interpreter(batch_model([op]).model)
    return str(err.value)


def test_unsupported_hybrid_variants_are_refused_with_a_reason():
    rng = np.random.default_rng(3)
    cfg = _config(rng, batch=1, time=2, n_input=3, n_cell=4, n_output=4, proj=False,
                  cifg=False, peephole=False, ln=False)

    op = _lstm_op(rng, cfg)  # per-channel input-to-forget weights
    w = op.inputs[2]
    op.inputs[2] = T.const(w.data, [0.01, 0.02, 0.03, 0.04], [0, 0, 0, 0])
    assert "per-channel" in _refused(op)

    op = _lstm_op(rng, cfg)  # uint8 weights (LiteRT would read them as int8)
    op.inputs[3] = T.const(op.inputs[3].data.view(np.uint8), 0.01, 128)
    assert "UINT8" in _refused(op)

    op = _lstm_op(rng, cfg)  # 1-D (diagonal) recurrent weights
    op.inputs[6] = T.const(rng.integers(-127, 128, 4).astype(np.int8), 0.01, 0)
    assert "diagonal" in _refused(op)

    op = _lstm_op(rng, cfg)  # float projection weights next to int8 gate weights
    op.inputs[16] = T.const(np.ones((4, 4), np.float32))
    assert "projection weights" in _refused(op)

    op = _lstm_op(rng, cfg)  # rank-2 input
    op.inputs[0] = T((2, 3), np.float32)
    op.outputs[0] = T((2, 4), np.float32)
    assert "rank 3" in _refused(op)

    op = _lstm_op(rng, cfg)  # a state that is not a variable tensor
    op.inputs[19] = T((1, 4), np.float32)
    assert "variable" in _refused(op)


def test_supported_hybrid_variant_loads():
    """The check's counterpart: a plain hybrid LSTM (20 inputs, no layer norm) loads."""
    rng = np.random.default_rng(8)
    cfg = _config(rng, batch=1, time=2, n_input=3, n_cell=4, n_output=4, proj=False)
    op = _lstm_op(rng, cfg)
    op.inputs = op.inputs[:20]
    x = rng.normal(0, 1, op.inputs[0].shape).astype(np.float32)
    built = batch_model([op])
    ref = _LiteRT(built.model, "BUILTIN_REF").run([x])[0]
    assert _close(list(Interpreter(built.model).invoke([x]).values())[0], ref)
