"""The models of the refusal audit (test_refusal_audit.py): every (op, tensor type,
quantization form) the interpreter's kernels can be asked for, as one-op models built for
the purpose with the project's writers.

Four families, each a list of `Case` (built lazily: a case is a label and a function):

* **activations** — the ops with a simple signature (op_type_models.py: unary, binary,
  comparison, reduction, data movement) in every tensor type, with every tensor of the
  swept type given the swept form (`with_form`): the same parameters on an input and an
  output of the same shape, which is what a data-movement kernel needs to keep meaning.
* **weights** — the weighted ops' matrix (quant_form_models.py: op x activations x
  weight type x form).
* **conv** — the conv and pool families in each type configuration and version
  (conv_pool_models.py).
* **densify** — DENSIFY of a sparse constant in every type and form (the form passes
  through to the dense output).
* **scales** — every op of the activations family with quantized INT8, UINT8 or INT16
  tensors whose scale is 0 on its first input or on its output (the degenerate parameters
  `accepts.check_scales` refuses where they are read).
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tflite_viewer.edit.tree import ModelTree
from tflite_viewer.edit.writer import serialize
from tflite_viewer.schema import schema_generated as S

from . import conv_pool_models as conv_pool
from . import op_type_models as simple
from . import quant_form_models as qf
from .litert_meaning import Verdict, judge_weight

FORMS = ("none", "per-tensor", "per-channel:0", "per-channel:last", "blockwise", "custom",
         "multi-axis")
_TYPE_NAMES = {v: k for k, v in vars(S.TensorType).items() if not k.startswith("_")}


@dataclass(frozen=True)
class Case:
    family: str
    op: str
    label: str
    make: Callable[[], tuple[bytes, list[np.ndarray]]]
    #: when it runs here, compare it with LiteRT (a form or scale beyond the plain ones
    #: that the other LiteRT tests cover)
    compare: bool = False
    #: LiteRT's verdict by a judge of the family's own (None: `litert_meaning.judge`)
    verdict: Callable[[], Verdict] | None = None

    @property
    def key(self) -> str:
        return f"{self.family} {self.op} {self.label}"


def _scales(base: float, n: int) -> list[float]:
    """``n`` scales from ``base`` up, each channel's well apart from the others' (a kernel
    that reads one scale for all is far off), the same for every tensor with ``n``
    channels (so an input and an output of one shape carry equal parameters)."""
    return [float(base * (1.0 + 0.75 * k)) for k in range(n)]


def _scale_tensor(tree: S.ModelT, sg: S.SubGraphT, shape: tuple[int, ...], base: float,
                  cache: dict) -> int:
    """The index of a constant FLOAT16 scale tensor of ``shape`` (one per shape)."""
    if shape in cache:
        return cache[shape]
    values = np.asarray(_scales(base, int(np.prod(shape))), np.float16).reshape(shape)
    buf = S.BufferT()
    buf.data = np.frombuffer(values.tobytes(), np.uint8)
    tree.buffers.append(buf)
    t = S.TensorT()
    t.name, t.shape, t.type = f"scales{len(sg.tensors)}", list(shape), S.TensorType.FLOAT16
    t.buffer = len(tree.buffers) - 1
    sg.tensors.append(t)
    cache[shape] = len(sg.tensors) - 1
    return cache[shape]


def _form(tree: S.ModelT, sg: S.SubGraphT, t: S.TensorT, form: str, cache: dict):
    """The QuantizationParametersT of ``form`` for tensor ``t`` (None: no parameters), or
    the tensor's own when the form does not fit its shape (a scalar)."""
    old = t.quantization
    base = float(old.scale[0]) if old is not None and old.scale is not None and \
        len(old.scale) else 0.05
    zp = int(old.zeroPoint[0]) if old is not None and old.zeroPoint is not None and \
        len(old.zeroPoint) else 0
    shape = tuple(int(d) for d in (t.shape if t.shape is not None else []))
    if form == "none":
        return None
    q = S.QuantizationParametersT()
    if form == "per-tensor":
        q.scale, q.zeroPoint = [base], [zp]
        return q
    if not shape or 0 in shape:
        return old
    if form.startswith("per-channel"):
        axis = 0 if form.endswith(":0") else len(shape) - 1
        n = shape[axis]
        q.scale, q.zeroPoint, q.quantizedDimension = _scales(base, n), [zp] * n, axis
        return q
    if form == "blockwise":
        block = shape[-1] // 2 if shape[-1] % 2 == 0 else shape[-1]
        d = S.BlockwiseQuantizationT()
        d.scales = _scale_tensor(tree, sg, shape[:-1] + (shape[-1] // block,), base, cache)
        d.zeroPoints, d.blockSize = -1, block
        q.detailsType, q.details = S.QuantizationDetails.BlockwiseQuantization, d
        return q
    if form == "multi-axis":
        d = S.MultiAxisQuantizationT()
        d.scales = _scale_tensor(tree, sg, shape[:1], base, cache)
        d.zeroPoints, d.blockSize, d.quantizedDimensions = -1, 0, [0]
        q.detailsType, q.details = S.QuantizationDetails.MultiAxisQuantization, d
        return q
    d = S.CustomQuantizationT()
    d.custom = [1, 2]
    q.detailsType, q.details = S.QuantizationDetails.CustomQuantization, d
    return q


def with_form(model: bytes, type_name: str, form: str) -> bytes:
    """``model`` with every tensor of type ``type_name`` in quantization ``form``; a tensor
    with no stored shape (an output shaped at run time) takes the parameters of the first
    one that has a shape (LiteRT checks a scale count against a shape only when there is
    one)."""
    tree = S.ModelT.InitFromPackedBuf(model, 0)
    sg = tree.subgraphs[0]
    cache: dict = {}
    swept = [t for t in sg.tensors if _TYPE_NAMES.get(t.type) == type_name]
    first = None
    for t in swept:
        if t.shape is not None and len(t.shape):
            t.quantization = _form(tree, sg, t, form, cache)
            first = t if first is None else first
    for t in swept:
        if t.shape is None or not len(t.shape):
            t.quantization = first.quantization if first is not None \
                else _form(tree, sg, t, form, cache)
    return serialize(ModelTree(tree))


def with_zero_scale(model: bytes, where: str) -> bytes | None:
    """``model`` with the scale of its first input (``where`` "input") or of its output
    ("output") set to 0, or None when that tensor has no scale."""
    tree = S.ModelT.InitFromPackedBuf(model, 0)
    sg = tree.subgraphs[0]
    op = sg.operators[0]
    index = op.inputs[0] if where == "input" else op.outputs[0]
    q = sg.tensors[index].quantization
    if q is None or q.scale is None or not len(q.scale):
        return None
    q.scale = [0.0] * len(q.scale)
    return serialize(ModelTree(tree))


def _seed(*parts: str) -> np.random.Generator:
    import zlib
    return np.random.default_rng(zlib.crc32(" ".join(parts).encode()))


SIMPLE_OPS = simple.UNARY + simple.BINARY + simple.COMPARE + simple.REDUCE + simple.MOVE


def activation_cases() -> list[Case]:
    cases = []
    for op in SIMPLE_OPS:
        for tname in simple.TYPES:
            for form in FORMS:
                def make(op=op, tname=tname, form=form):
                    model, inputs = simple.build(op, tname, _seed(op, tname))
                    return with_form(model, tname, form), inputs
                cases.append(Case("activations", op, f"{tname} {form}", make,
                                  form not in ("none", "per-tensor")))
    return cases


@functools.lru_cache(maxsize=4)
def _weights(op: str, act: str, wtype: str, form: str, draw: int = 0):
    return qf.build(op, act, wtype, form, _seed(op, act, wtype, form, str(draw)))


def _weight_verdict(combo: tuple[str, str, str, str]) -> Verdict:
    """LiteRT's verdict on three random draws of a combination: "runs" only when it
    computes every draw with meaning (a kernel reading garbage can land near the real
    result once: PRELU reading a tiny INT2 alpha's packed bytes as int8)."""
    verdicts = [judge_weight(*_weights(*combo, draw)) for draw in range(3)]
    return next((v for v in verdicts if v.status != "runs"), verdicts[0])


def weight_cases() -> list[Case]:
    """The weights matrix, judged as tools/sweep_quant_forms.py judges it (against the
    op computed in float on the weight dequantized as its form says)."""
    cases = []
    for combo in qf.combos():
        cases.append(Case("weights", combo[0], " ".join(combo[1:]),
                          lambda combo=combo: _weights(*combo)[:2],
                          verdict=lambda combo=combo: _weight_verdict(combo)))
    return cases


def conv_cases() -> list[Case]:
    cases = []
    for op in conv_pool.CONV + conv_pool.POOL:
        for config in conv_pool.configs(op):
            for version in range(1, conv_pool.VERSIONS[op] + 1):
                def make(op=op, config=config, version=version):
                    return conv_pool.build(op, config, version, _seed(op, config, str(version)))
                cases.append(Case("conv", op, f"{config} v{version}", make))
    return cases


def sparse_constant(dense: np.ndarray) -> tuple[np.ndarray, S.SparsityParametersT]:
    """The stored values and SparsityParameters of a 2-D ``dense`` array in CSR form
    (rows dense, columns sparse): only its nonzero values are stored, row by row."""
    rows = dense.shape[0]
    segments, indices = [0], []
    for r in range(rows):
        cols = np.flatnonzero(dense[r])
        indices.extend(int(c) for c in cols)
        segments.append(len(indices))
    sp = S.SparsityParametersT()
    sp.traversalOrder, sp.blockMap = [0, 1], []
    d0, d1 = S.DimensionMetadataT(), S.DimensionMetadataT()
    d0.format, d0.denseSize = S.DimensionType.DENSE, rows
    d1.format = S.DimensionType.SPARSE_CSR
    seg, ind = S.Int32VectorT(), S.Int32VectorT()
    seg.values, ind.values = segments, indices
    d1.arraySegmentsType, d1.arraySegments = S.SparseIndexVector.Int32Vector, seg
    d1.arrayIndicesType, d1.arrayIndices = S.SparseIndexVector.Int32Vector, ind
    sp.dimMetadata = [d0, d1]
    return dense[dense != 0], sp


_NUMPY = {"FLOAT32": np.float32, "FLOAT16": np.float16, "INT8": np.int8, "UINT8": np.uint8,
          "INT16": np.int16, "INT32": np.int32, "INT64": np.int64}


def densify_model(tname: str, rng: np.random.Generator, shape=(8, 16)) -> bytes:
    """DENSIFY of a sparse ``tname`` constant of ``shape`` (half its values zero; INT8,
    UINT8 and INT16 ones quantized per tensor), the dense tensor the model's output."""
    dtype = np.dtype(_NUMPY[tname])
    if dtype.kind == "f":
        dense = rng.standard_normal(shape).astype(dtype)
    else:
        dense = rng.integers(1, 100, shape).astype(dtype)
    dense[rng.random(shape) < 0.5] = 0
    stored, sp = sparse_constant(dense)
    tree = S.ModelT()
    tree.version, tree.buffers = 3, [S.BufferT()]
    buf = S.BufferT()
    buf.data = np.frombuffer(stored.tobytes(), np.uint8)
    tree.buffers.append(buf)
    sg = S.SubGraphT()
    q = None
    if tname in ("INT8", "UINT8", "INT16"):
        q = S.QuantizationParametersT()
        q.scale, q.zeroPoint = [0.05], [0]
    for k, name in enumerate(("sparse", "dense")):
        t = S.TensorT()
        t.name, t.shape, t.type = name, list(shape), getattr(S.TensorType, tname)
        t.buffer, t.quantization = (1 if k == 0 else 0), q
        if k == 0:
            t.sparsity = sp
        sg.tensors = (sg.tensors or []) + [t]
    sg.inputs, sg.outputs = [], [1]
    oc = S.OperatorCodeT()
    oc.builtinCode = oc.deprecatedBuiltinCode = S.BuiltinOperator.DENSIFY
    oc.version = 1
    op = S.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, [0], [1]
    sg.operators = [op]
    tree.operatorCodes, tree.subgraphs = [oc], [sg]
    return serialize(ModelTree(tree))


DENSIFY_TYPES = ("FLOAT32", "FLOAT16", "INT8", "UINT8", "INT16", "INT32")


def densify_cases() -> list[Case]:
    cases = []
    for tname in DENSIFY_TYPES:
        for form in FORMS:
            def make(tname=tname, form=form):
                return with_form(densify_model(tname, _seed("DENSIFY", tname)), tname,
                                 form), []
            cases.append(Case("densify", "DENSIFY", f"{tname} {form}", make, True))
    return cases


def scale_cases() -> list[Case]:
    cases = []
    for op in SIMPLE_OPS:
        for tname, where in itertools.product(("INT8", "UINT8", "INT16"), ("input", "output")):
            def make(op=op, tname=tname, where=where):
                model, inputs = simple.build(op, tname, _seed(op, tname))
                zeroed = with_zero_scale(model, where)
                return (zeroed if zeroed is not None else model), inputs
            cases.append(Case("scales", op, f"{tname} zero {where} scale", make, True))
    return cases


def all_cases() -> list[Case]:
    return (activation_cases() + weight_cases() + conv_cases() + densify_cases()
            + scale_cases())
