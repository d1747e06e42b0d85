"""A > 2 GB decoder with the layout of an LLM export, written by the project's writer.

The shape of what litert-torch produces for a TinyLlama-class model, with random weights:
two signatures, ``prefill`` (8 tokens) and ``decode`` (1 token), each its own subgraph,
sharing every weight buffer; per layer an RMS norm, q/k/v/o and gate/up/down
FULLY_CONNECTED weights, a KV cache per layer passed in and out of both signatures
(``kv_cache_k_<n>`` / ``kv_cache_v_<n>``, updated with DYNAMIC_UPDATE_SLICE at the position
in ``kv_slice_start``), masked attention (BATCH_MATMUL, SOFTMAX) and a tied-free lm_head.
Weights are stored after the flatbuffer (``Buffer.offset``/``size``), as every > 2 GB
model must be.  Grouped-query attention and RoPE are left out: they change neither the
file's layout nor the weight volume much.

The default (10 layers, width 2048, MLP 5632, vocabulary 32000) holds 0.65 B float32
parameters: a 2.6 GB file.  Generating it needs about 5.5 GB of memory for a minute.
Not committed; the benchmarks write it to a temporary directory::

    python benchmarks/big_decoder.py OUT.tflite [--layers 10] [--width 2048] ...
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tflite_viewer.edit.tree import ModelTree  # noqa: E402
from tflite_viewer.edit.writer import serialize  # noqa: E402
from tflite_viewer.schema import schema_generated as S  # noqa: E402

Op = S.BuiltinOperator
F32, I32 = S.TensorType.FLOAT32, S.TensorType.INT32


@dataclass(frozen=True)
class Config:
    layers: int = 10
    width: int = 2048
    mlp: int = 5632
    vocab: int = 32000
    heads: int = 16
    max_seq: int = 256
    prefill: int = 8
    seed: int = 0

    @property
    def head_dim(self) -> int:
        return self.width // self.heads

    @property
    def parameters(self) -> int:
        c, m = self.width, self.mlp
        return 2 * self.vocab * c + self.layers * (4 * c * c + 3 * c * m + 2 * c) + c


#: a configuration small enough for tests (a few MB), same structure
TINY = Config(layers=2, width=64, mlp=96, vocab=100, heads=4, max_seq=16, prefill=4)


class _Builder:
    """Buffers shared by every subgraph; tensors and operators of one subgraph at a time."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.rng = np.random.default_rng(cfg.seed)
        self.buffers: list = [S.BufferT()]
        self.codes: dict[int, int] = {}
        self.code_list: list = []
        self.weights: dict[str, int] = {}

    # -- shared -------------------------------------------------------------------------
    def weight(self, name: str, shape: tuple[int, ...], scale: float = 0.02,
               ones: bool = False) -> int:
        """A float32 weight buffer, made once and shared by every subgraph."""
        if name not in self.weights:
            if ones:
                arr = np.ones(shape, np.float32)
            else:
                arr = self.rng.standard_normal(shape, dtype=np.float32)
                arr *= np.float32(scale)
            buf = S.BufferT()
            buf.data = arr.reshape(-1).view(np.uint8)
            self.buffers.append(buf)
            self.weights[name] = len(self.buffers) - 1
        return self.weights[name]

    def const(self, values: np.ndarray) -> int:
        buf = S.BufferT()
        buf.data = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
        self.buffers.append(buf)
        return len(self.buffers) - 1

    def code(self, builtin: int, version: int = 1) -> int:
        if builtin not in self.codes:
            c = S.OperatorCodeT()
            c.builtinCode, c.deprecatedBuiltinCode = builtin, min(builtin, 127)
            c.version = version
            self.code_list.append(c)
            self.codes[builtin] = len(self.code_list) - 1
        return self.codes[builtin]

    # -- one subgraph -------------------------------------------------------------------
    def start(self, name: str) -> None:
        self.tensors: list = []
        self.ops: list = []
        self.sg_name = name

    def tensor(self, name: str, shape, ttype: int = F32, buffer: int = 0) -> int:
        t = S.TensorT()
        t.name, t.shape, t.type, t.buffer = name.encode(), np.asarray(shape, np.int32), ttype, buffer
        self.tensors.append(t)
        return len(self.tensors) - 1

    def op(self, builtin: int, inputs, out_shape, name: str, options=None,
           options_type: int = 0, version: int = 1, ttype: int = F32) -> int:
        out = self.tensor(name, out_shape, ttype)
        o = S.OperatorT()
        o.opcodeIndex = self.code(builtin, version)
        o.inputs, o.outputs = np.asarray(inputs, np.int32), np.asarray([out], np.int32)
        if options is not None:
            o.builtinOptionsType, o.builtinOptions = options_type, options
        self.ops.append(o)
        return out


def _opts(cls, **fields):
    o = cls()
    for k, v in fields.items():
        setattr(o, k, v)
    return o


def _subgraph(b: _Builder, name: str, seq: int) -> tuple:
    cfg = b.cfg
    c, h, d, s = cfg.width, cfg.heads, cfg.head_dim, cfg.max_seq
    b.start(name)
    tokens = b.tensor("tokens", [1, seq], I32)
    start = b.tensor("kv_slice_start", [4], I32)
    mask = b.tensor("mask", [1, 1, seq, s])
    caches_in, caches_out = [], []
    sig_in = [("tokens", tokens), ("kv_slice_start", start), ("mask", mask)]
    sig_out = []

    def w(wname, shape, **kw):
        return b.tensor(wname, shape, F32, b.weight(wname, shape, **kw))

    def fc(x, wname, n_out, n_in, tag):
        return b.op(Op.FULLY_CONNECTED, [x, w(wname, (n_out, n_in)), -1], [1, seq, n_out], tag,
                    _opts(S.FullyConnectedOptionsT, keepNumDims=True),
                    S.BuiltinOptions.FullyConnectedOptions, version=5)

    axis = b.tensor(f"{name}/mean_axis", [1], I32, b.const(np.array([2], np.int32)))
    eps = b.tensor(f"{name}/eps", [], F32, b.const(np.array(1e-6, np.float32)))
    scale = b.tensor(f"{name}/attn_scale", [], F32,
                     b.const(np.array(1 / np.sqrt(d), np.float32)))

    def shape_const(tag, shape):
        return b.tensor(tag, [len(shape)], I32, b.const(np.asarray(shape, np.int32)))

    def perm(tag, p):
        return b.tensor(tag, [len(p)], I32, b.const(np.asarray(p, np.int32)))

    def rms(x, wname, tag):
        sq = b.op(Op.MUL, [x, x], [1, seq, c], f"{tag}/sq")
        ms = b.op(Op.MEAN, [sq, axis], [1, seq, 1], f"{tag}/mean",
                  _opts(S.ReducerOptionsT, keepDims=True), S.BuiltinOptions.ReducerOptions)
        ms = b.op(Op.ADD, [ms, eps], [1, seq, 1], f"{tag}/eps")
        r = b.op(Op.RSQRT, [ms], [1, seq, 1], f"{tag}/rsqrt")
        xn = b.op(Op.MUL, [x, r], [1, seq, c], f"{tag}/scaled")
        return b.op(Op.MUL, [xn, w(wname, (c,), ones=True)], [1, seq, c], f"{tag}/out")

    emb = w("embedding", (cfg.vocab, c))
    x = b.op(Op.GATHER, [emb, tokens], [1, seq, c], "embed",
             _opts(S.GatherOptionsT, axis=0), S.BuiltinOptions.GatherOptions)
    heads4 = shape_const(f"{name}/heads_shape", [1, seq, h, d])
    flat3 = shape_const(f"{name}/flat_shape", [1, seq, c])
    p0213 = perm(f"{name}/perm_0213", [0, 2, 1, 3])
    p0231 = perm(f"{name}/perm_0231", [0, 2, 3, 1])
    for n in range(cfg.layers):
        L = f"layer_{n}"
        xn = rms(x, f"{L}/input_norm", f"{L}/input_norm")
        q = fc(xn, f"{L}/q", c, c, f"{L}/q")
        k = fc(xn, f"{L}/k", c, c, f"{L}/k")
        v = fc(xn, f"{L}/v", c, c, f"{L}/v")
        q4 = b.op(Op.RESHAPE, [q, heads4], [1, seq, h, d], f"{L}/q4")
        k4 = b.op(Op.RESHAPE, [k, heads4], [1, seq, h, d], f"{L}/k4")
        v4 = b.op(Op.RESHAPE, [v, heads4], [1, seq, h, d], f"{L}/v4")
        kc = b.tensor(f"kv_cache_k_{n}", [1, s, h, d])
        vc = b.tensor(f"kv_cache_v_{n}", [1, s, h, d])
        kc2 = b.op(Op.DYNAMIC_UPDATE_SLICE, [kc, k4, start], [1, s, h, d], f"{L}/k_cache_out")
        vc2 = b.op(Op.DYNAMIC_UPDATE_SLICE, [vc, v4, start], [1, s, h, d], f"{L}/v_cache_out")
        caches_in += [kc, vc]
        caches_out += [kc2, vc2]
        sig_in += [(f"kv_cache_k_{n}", kc), (f"kv_cache_v_{n}", vc)]
        sig_out += [(f"kv_cache_k_{n}", kc2), (f"kv_cache_v_{n}", vc2)]
        qt = b.op(Op.TRANSPOSE, [q4, p0213], [1, h, seq, d], f"{L}/qt")
        kt = b.op(Op.TRANSPOSE, [kc2, p0231], [1, h, d, s], f"{L}/kt")
        vt = b.op(Op.TRANSPOSE, [vc2, p0213], [1, h, s, d], f"{L}/vt")
        sc = b.op(Op.BATCH_MATMUL, [qt, kt], [1, h, seq, s], f"{L}/scores",
                  _opts(S.BatchMatMulOptionsT), S.BuiltinOptions.BatchMatMulOptions)
        sc = b.op(Op.MUL, [sc, scale], [1, h, seq, s], f"{L}/scaled")
        sc = b.op(Op.ADD, [sc, mask], [1, h, seq, s], f"{L}/masked")
        p = b.op(Op.SOFTMAX, [sc], [1, h, seq, s], f"{L}/probs",
                 _opts(S.SoftmaxOptionsT, beta=1.0), S.BuiltinOptions.SoftmaxOptions)
        o = b.op(Op.BATCH_MATMUL, [p, vt], [1, h, seq, d], f"{L}/attn",
                 _opts(S.BatchMatMulOptionsT), S.BuiltinOptions.BatchMatMulOptions)
        o = b.op(Op.TRANSPOSE, [o, p0213], [1, seq, h, d], f"{L}/attn_t")
        o = b.op(Op.RESHAPE, [o, flat3], [1, seq, c], f"{L}/attn_flat")
        x = b.op(Op.ADD, [x, fc(o, f"{L}/o", c, c, f"{L}/o")], [1, seq, c], f"{L}/residual_1")
        hn = rms(x, f"{L}/post_norm", f"{L}/post_norm")
        g = fc(hn, f"{L}/gate", cfg.mlp, c, f"{L}/gate")
        u = fc(hn, f"{L}/up", cfg.mlp, c, f"{L}/up")
        sig = b.op(Op.LOGISTIC, [g], [1, seq, cfg.mlp], f"{L}/sigmoid")
        g = b.op(Op.MUL, [g, sig], [1, seq, cfg.mlp], f"{L}/silu")
        g = b.op(Op.MUL, [g, u], [1, seq, cfg.mlp], f"{L}/gated")
        dn = fc(g, f"{L}/down", c, cfg.mlp, f"{L}/down")
        x = b.op(Op.ADD, [x, dn], [1, seq, c], f"{L}/residual_2")
    xn = rms(x, "final_norm", "final_norm")
    logits = fc(xn, "lm_head", cfg.vocab, c, "logits")
    sig_out = [("logits", logits)] + sig_out
    sg = S.SubGraphT()
    sg.name = name.encode()
    sg.tensors, sg.operators = b.tensors, b.ops
    sg.inputs = np.asarray([t for _, t in sig_in], np.int32)
    sg.outputs = np.asarray([t for _, t in sig_out], np.int32)
    return sg, sig_in, sig_out


def build(cfg: Config = Config()) -> ModelTree:
    """The object tree of the model (weights as numpy arrays, written by `write`)."""
    b = _Builder(cfg)
    subgraphs, sigs = [], []
    for k, (name, seq) in enumerate((("prefill", cfg.prefill), ("decode", 1))):
        sg, ins, outs = _subgraph(b, name, seq)
        subgraphs.append(sg)
        sig = S.SignatureDefT()
        sig.signatureKey, sig.subgraphIndex = name.encode(), k
        sig.inputs = [_map(n, t) for n, t in ins]
        sig.outputs = [_map(n, t) for n, t in outs]
        sigs.append(sig)
    m = S.ModelT()
    m.version = 3
    m.description = b"big_decoder.py: random weights, LLM export layout"
    m.operatorCodes = b.code_list
    m.subgraphs, m.buffers, m.signatureDefs = subgraphs, b.buffers, sigs
    return ModelTree(m, offset_layout=True)


def _map(name: str, index: int):
    t = S.TensorMapT()
    t.name, t.tensorIndex = name.encode(), index
    return t


def write(path: Path, cfg: Config = Config()) -> Path:
    """Write the model (weights after the flatbuffer) and return the path."""
    tree = build(cfg)
    data = serialize(tree, layout="offset")
    del tree
    Path(path).write_bytes(data)
    return Path(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", type=Path)
    for field, default in Config().__dict__.items():
        ap.add_argument(f"--{field.replace('_', '-')}", type=int, default=default)
    args = ap.parse_args(argv)
    cfg = Config(**{f: getattr(args, f) for f in Config().__dict__})
    print(f"{cfg.parameters / 1e9:.2f} B parameters -> {args.output}")
    write(args.output, cfg)
    print(f"wrote {args.output.stat().st_size / 1e9:.2f} GB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
