"""A decoder with a KV cache, written by the project's own writer (`edit.writer`), shaped
like a litert-torch export: a ``prefill_N`` and a ``decode`` signature over one set of
weights (the same buffers), ``tokens`` / ``input_pos`` / ``kv_cache_k_i`` /
``kv_cache_v_i`` inputs listed alphabetically (not in the subgraph's order), the cache
given back under the same names, ``logits`` on decode only, and each RMS norm an
``odml.rms_norm`` STABLEHLO_COMPOSITE with a decomposition subgraph of its own.

Per layer: RMS norm (composite), q/k/v projections, the new k and v written into the
cache at ``input_pos[0]`` (DYNAMIC_UPDATE_SLICE), attention over the whole cache with
positions after each token's own masked (LESS_EQUAL, SELECT_V2), the output projection
with a residual.  Then the logits projection.  Weights are float32, or INT4 blockwise
with FLOAT16 scales (``flavour="int4_blockwise"``), as ai-edge-quantizer stores them.

>>> data = kv_decoder_model(seed=0)
>>> Interpreter(data).signature_keys()
['prefill_6', 'decode']
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from flatbuffers import flexbuffers

from tflite_viewer.edit.tree import ModelTree
from tflite_viewer.edit.writer import serialize
from tflite_viewer.schema import schema_generated as S

from .llm_models import _BITS, _NUMPY, Blockwise, _quantization, pack
from .singleop import set_options

LAYERS, PREFILL, CACHE, DIM, VOCAB, BLOCK = 2, 6, 16, 32, 64, 16
KV_NAMES = tuple(f"kv_cache_{a}_{layer}" for a in "kv" for layer in range(LAYERS))


class _Model:
    """The model being written: operator codes and buffers shared by every subgraph."""

    def __init__(self) -> None:
        self.m = S.ModelT()
        self.m.version = 3
        self.m.description = "kv-cache decoder test model"
        self.m.buffers = [S.BufferT()]
        self.m.operatorCodes = []
        self.m.subgraphs = []
        self.m.signatureDefs = []
        self._codes: dict[str, int] = {}
        self._buffers: dict[str, int] = {}

    def code(self, op: str) -> int:
        if op not in self._codes:
            oc = S.OperatorCodeT()
            oc.builtinCode = getattr(S.BuiltinOperator, op)
            oc.deprecatedBuiltinCode = min(oc.builtinCode, 127)
            oc.version = 1
            self._codes[op] = len(self.m.operatorCodes)
            self.m.operatorCodes.append(oc)
        return self._codes[op]

    def buffer(self, key: str, raw: np.ndarray) -> int:
        """One buffer per weight: a second subgraph's tensor of it points at the same."""
        if key not in self._buffers:
            b = S.BufferT()
            b.data = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
            self.m.buffers.append(b)
            self._buffers[key] = len(self.m.buffers) - 1
        return self._buffers[key]

    def signature(self, key: str, subgraph: int, inputs: dict[str, int],
                  outputs: dict[str, int]) -> None:
        sig = S.SignatureDefT()
        sig.signatureKey, sig.subgraphIndex = key, subgraph

        def maps(pairs):
            out = []
            for name in sorted(pairs):  # alphabetical, as litert-torch lists them
                tm = S.TensorMapT()
                tm.name, tm.tensorIndex = name, pairs[name]
                out.append(tm)
            return out
        sig.inputs, sig.outputs = maps(inputs), maps(outputs)
        self.m.signatureDefs.append(sig)


class _Sub:
    """One subgraph being written."""

    def __init__(self, model: _Model, name: str) -> None:
        self.model = model
        self.sg = S.SubGraphT()
        self.sg.name = name
        self.sg.tensors, self.sg.operators = [], []
        self.index = len(model.m.subgraphs)
        model.m.subgraphs.append(self.sg)

    def _tensor(self, name: str, shape, tname: str, buffer: int = 0, quant=None) -> int:
        t = S.TensorT()
        t.name, t.shape, t.buffer = name, [int(d) for d in shape], buffer
        t.type = getattr(S.TensorType, tname)
        t.quantization = _quantization(quant)
        self.sg.tensors.append(t)
        return len(self.sg.tensors) - 1

    def act(self, name: str, shape, tname: str = "FLOAT32") -> int:
        return self._tensor(name, shape, tname)

    def const(self, name: str, values: np.ndarray, tname: str | None = None, quant=None) -> int:
        values = np.asarray(values)
        if tname is None:
            tname = next(k for k, v in _NUMPY.items() if np.dtype(v) == values.dtype)
        raw = pack(values, _BITS[tname]) if tname in _BITS else \
            values.astype(_NUMPY[tname]).reshape(-1)
        return self._tensor(name, values.shape, tname, self.model.buffer(name, raw), quant)

    def op(self, op: str, inputs: Sequence[int], outputs: Sequence[int],
           options_type: str | None = None, options: dict[str, Any] | None = None) -> None:
        o = S.OperatorT()
        o.opcodeIndex = self.model.code(op)
        o.inputs, o.outputs = list(inputs), list(outputs)
        if options_type is not None:
            set_options(o, options_type, options or {})
        self.sg.operators.append(o)

    def out(self, op: str, inputs, name: str, shape, tname: str = "FLOAT32",
            options_type: str | None = None, options: dict[str, Any] | None = None) -> int:
        t = self.act(name, shape, tname)
        self.op(op, inputs, [t], options_type, options)
        return t


def _weights(rng: np.random.Generator, flavour: str) -> dict[str, tuple]:
    """name -> (values, type name, scales or None): the decoder's weights, drawn once and
    written into both signatures' subgraphs."""
    out: dict[str, tuple] = {"embed": ((rng.standard_normal((VOCAB, DIM)) * 0.5)
                                       .astype(np.float32), None, None)}
    names = [f"l{layer}_{w}" for layer in range(LAYERS) for w in "qkvo"] + ["lm_head"]
    for name in names:
        n = VOCAB if name == "lm_head" else DIM
        if flavour == "int4_blockwise":
            q = rng.integers(-8, 8, (n, DIM)).astype(np.int8)
            scales = (rng.random((n, DIM // BLOCK)) * 0.05 + 0.02).astype(np.float16)
            out[name] = (q, "INT4", scales)
        else:
            out[name] = ((rng.standard_normal((n, DIM)) * 0.25).astype(np.float32), None, None)
    for layer in range(LAYERS):
        out[f"l{layer}_norm"] = ((1 + 0.1 * rng.standard_normal(DIM)).astype(np.float32),
                                 None, None)
    return out


def _rms_norm(model: _Model, sub: _Sub, x: int, gamma: int, tokens: int, tag: str) -> int:
    """An ``odml.rms_norm`` composite over ``x`` [tokens, DIM] and ``gamma``; its
    decomposition is a subgraph of its own (as litert-torch writes one per call)."""
    body = _Sub(model, f"odml.rms_norm.impl_{tag}")
    bx, bg = body.act("x", (tokens, DIM)), body.act("weight", (DIM,))
    sq = body.out("MUL", [bx, bx], "sq", (tokens, DIM), options_type="MulOptions")
    axis = body.const(f"{tag}_axis", np.array([-1], np.int32))
    ms = body.out("MEAN", [sq, axis], "mean", (tokens, 1), options_type="ReducerOptions",
                  options={"keep_dims": True})
    eps = body.const(f"{tag}_eps", np.array([1e-6], np.float32))
    r = body.out("RSQRT", [body.out("ADD", [ms, eps], "var", (tokens, 1),
                                    options_type="AddOptions")], "rsqrt", (tokens, 1))
    xn = body.out("MUL", [bx, r], "normed", (tokens, DIM), options_type="MulOptions")
    y = body.out("MUL", [xn, bg], "scaled", (tokens, DIM), options_type="MulOptions")
    body.sg.inputs, body.sg.outputs = [bx, bg], [y]
    out = sub.act(f"{tag}_rms_norm", (tokens, DIM))
    sub.op("STABLEHLO_COMPOSITE", [x, gamma], [out], "StableHLOCompositeOptions",
           {"name": "odml.rms_norm", "decomposition_subgraph_index": body.index,
            "version": 0, "composite_attributes": list(flexbuffers.Dumps({"epsilon": 1e-6})),
            "composite_attributes_format": 0})
    return out


def _signature(model: _Model, key: str, tokens: int, weights: dict[str, tuple],
               logits_out: bool, row_positions: bool = False) -> None:
    sub = _Sub(model, key)
    T, C, D, V = tokens, CACHE, DIM, VOCAB
    tok = sub.act("tokens", (1, T), "INT32")
    pos_in = pos = sub.act("input_pos", (1, T) if row_positions else (T,), "INT32")
    if row_positions:  # [1, T]: read as [T] from here on
        pos = sub.out("RESHAPE", [pos, sub.const(f"{key}_pos_flat", np.array([T], np.int32))],
                      "pos_flat", (T,), "INT32")
    caches = {name: sub.act(name, (1, C, 1, D)) for name in KV_NAMES}

    def w(name: str) -> int:
        values, tname, scales = weights[name]
        if scales is None:
            return sub.const(name, values, tname)
        s = sub.const(f"{name}_scales", scales)
        return sub.const(name, values, tname, Blockwise(s, BLOCK))

    def fc(x: int, name: str, n: int, out_name: str) -> int:
        return sub.out("FULLY_CONNECTED", [x, w(name), -1], out_name, (T, n),
                       options_type="FullyConnectedOptions")

    ids = sub.out("RESHAPE", [tok, sub.const(f"{key}_ids_shape", np.array([T], np.int32))],
                  "ids", (T,), "INT32")
    x = sub.out("EMBEDDING_LOOKUP", [ids, w("embed")], "embedded", (T, D))
    first = sub.out("SLICE", [pos, sub.const("zero1", np.array([0], np.int32)),
                              sub.const("one1", np.array([1], np.int32))], "pos0", (1,),
                    "INT32")
    start = sub.out("CONCATENATION", [sub.const("zero1", np.array([0], np.int32)), first,
                                      sub.const("zero2", np.array([0, 0], np.int32))],
                    "cache_start", (4,), "INT32", "ConcatenationOptions", {"axis": 0})
    allowed = sub.out("LESS_EQUAL", [sub.const("cache_positions", np.arange(C, dtype=np.int32)
                                               .reshape(1, C)),
                                     sub.out("RESHAPE", [pos, sub.const(
                                         f"{key}_pos_shape", np.array([T, 1], np.int32))],
                                         "pos_column", (T, 1), "INT32")],
                      "allowed", (T, C), "BOOL")
    mask = sub.out("SELECT_V2", [allowed, sub.const("mask_zero", np.zeros((1, 1), np.float32)),
                                 sub.const("mask_min", np.full((1, 1), -1e9, np.float32))],
                   "mask", (T, C))
    outs = {}
    for layer in range(LAYERS):
        h = _rms_norm(model, sub, x, w(f"l{layer}_norm"), T, f"{key}_l{layer}")
        q = fc(h, f"l{layer}_q", D, f"l{layer}_q")
        new = {}
        for a in "kv":
            proj = fc(h, f"l{layer}_{a}", D, f"l{layer}_{a}")
            rows = sub.out("RESHAPE", [proj, sub.const(f"{key}_new_shape",
                                                       np.array([1, T, 1, D], np.int32))],
                           f"l{layer}_{a}_new", (1, T, 1, D))
            name = f"kv_cache_{a}_{layer}"
            outs[name] = sub.out("DYNAMIC_UPDATE_SLICE", [caches[name], rows, start],
                                 f"{name}_updated", (1, C, 1, D))
            new[a] = sub.out("RESHAPE", [outs[name], sub.const(
                "cache_matrix", np.array([C, D], np.int32))], f"l{layer}_{a}_cache", (C, D))
        scores = sub.out("BATCH_MATMUL", [q, new["k"]], f"l{layer}_scores", (T, C),
                         options_type="BatchMatMulOptions", options={"adj_y": True})
        scaled = sub.out("MUL", [scores, sub.const("attn_scale", np.array(
            [1 / np.sqrt(D)], np.float32))], f"l{layer}_scaled", (T, C), options_type="MulOptions")
        probs = sub.out("SOFTMAX", [sub.out("ADD", [scaled, mask], f"l{layer}_masked", (T, C),
                                            options_type="AddOptions")],
                        f"l{layer}_probs", (T, C), options_type="SoftmaxOptions",
                        options={"beta": 1.0})
        att = sub.out("BATCH_MATMUL", [probs, new["v"]], f"l{layer}_attention", (T, D),
                      options_type="BatchMatMulOptions")
        x = sub.out("ADD", [x, fc(att, f"l{layer}_o", D, f"l{layer}_out")], f"l{layer}_residual",
                    (T, D), options_type="AddOptions")
    logits = sub.out("RESHAPE", [fc(x, "lm_head", V, "lm_head"),
                                 sub.const(f"{key}_logits_shape", np.array([1, T, V], np.int32))],
                     "logits", (1, T, V))
    inputs = {"tokens": tok, "input_pos": pos_in, **caches}
    sub.sg.inputs = [tok, pos_in, *caches.values()]  # the subgraph's order: not the signature's
    outputs = dict(outs)
    if logits_out:
        outputs["logits"] = logits
    sub.sg.outputs = list(outputs.values())
    model.signature(key, sub.index, inputs, outputs)


def kv_decoder_model(seed: int = 0, flavour: str = "float32",
                     row_positions: bool = False) -> bytes:
    """The .tflite bytes (see the module docstring); ``flavour``: float32 or
    int4_blockwise; ``row_positions``: ``input_pos`` of shape [1, N] (else [N])."""
    if flavour not in ("float32", "int4_blockwise"):
        raise ValueError(f"unknown flavour {flavour!r}")
    rng = np.random.default_rng(seed)
    weights = _weights(rng, flavour)
    model = _Model()
    # subgraph 0 is prefill, its norms' decompositions follow, then decode and its own
    for key, tokens, logits in ((f"prefill_{PREFILL}", PREFILL, False), ("decode", 1, True)):
        _signature(model, key, tokens, weights, logits, row_positions)
    return serialize(ModelTree(model.m))
