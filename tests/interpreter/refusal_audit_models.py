"""The models of the refusal audit (test_refusal_audit.py): every (op, tensor type,
quantization form) the interpreter's kernels can be asked for, as one-op models built for
the purpose with the project's writers.

Four families, each a list of `Case` (built lazily: a case is a label and a function):

* **activations** — the ops with a simple signature (op_type_models.py: unary, binary,
  comparison, reduction, data movement) in every tensor type, with every tensor of the
  swept type given the swept form (`with_form`): the same parameters on an input and an
  output of the same shape, which is what a data-movement kernel needs to keep meaning.
  The ops on stored integers (`STORED`) also get a *differing* variant of each
  per-channel and blockwise form (`with_differing`: one tensor's parameters off from the
  others', or varying along the axis an ARG op reduces), where LiteRT's result has no
  meaning and the refusal is checked against it too.  LiteRT is judged "runs" only when
  it computes three draws of the inputs with meaning (`_draws_verdict`: one draw can land
  near the real result by chance).
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
from .litert_meaning import Verdict, judge, judge_weight

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
#: the simple ops whose kernels compute on stored integers per channel where their values
#: pair (interpreter/stored_values.py): each gets a differing variant of its forms
STORED = ("ABS", "NEG", "MAXIMUM", "MINIMUM", "FLOOR_MOD", "REDUCE_MAX", "REDUCE_MIN",
          "ARG_MAX", "ARG_MIN", "CONCATENATION", "LESS", "LESS_EQUAL", "GREATER",
          "GREATER_EQUAL")
_DIFFERING_FORMS = ("per-channel:0", "per-channel:last", "blockwise")


def _conditioned(op: str, tname: str, inputs: list, rng: np.random.Generator) -> list:
    """The inputs, with values that let the judge tell LiteRT's result from a wrong one
    where op_type_models' would not: an INT16 PRELU's alphas beyond the int8 range (LiteRT
    reads them through an int8 pointer, so their low bytes alone would count), an INT16
    REDUCE_PROD's factors whose product is many output steps (the default values' product
    is below one step, so all zeros would look right), a comparison's two sides a few
    stored steps apart (so that the comparison of real values turns on the parameters:
    on far-apart values, different scales change only a few results, which the judge
    takes for ties broken differently)."""
    if op in simple.COMPARE and tname in ("INT8", "UINT8", "INT16"):
        x, y = inputs
        near = np.broadcast_to(y, x.shape).astype(np.int64) + rng.integers(-3, 4, x.shape)
        info = np.iinfo(x.dtype)
        return [np.clip(near, info.min, info.max).astype(x.dtype), y]
    if tname != "INT16":
        return inputs
    if op == "PRELU":
        alpha = rng.integers(200, 1000, inputs[1].shape) * rng.choice([-1, 1], inputs[1].shape)
        return [inputs[0], alpha.astype(np.int16)]
    if op == "REDUCE_PROD":
        x = rng.integers(300, 1400, inputs[0].shape) * rng.choice([-1, 1], inputs[0].shape)
        return [x.astype(np.int16)] + list(inputs[1:])
    return inputs


def _activation(op: str, tname: str, form: str, draw: int = 0, differing: bool = False):
    """(model, inputs) of an activations case; ``draw`` > 0 draws other input values."""
    rng = _seed(op, tname, *((str(draw),) if draw else ()))
    model, inputs = simple.build(op, tname, rng)
    model = with_form(model, tname, form)
    if differing:
        model = with_differing(model, op, tname, form)
    return model, _conditioned(op, tname, inputs, rng)


def _draws_verdict(make: Callable[[int], tuple[bytes, list]]) -> Verdict:
    """LiteRT's verdict (`litert_meaning.judge`) on draw 0 of a case, and when that one
    "runs", on two more draws of its inputs: "runs" only when all do."""
    verdict = judge(*make(0))
    for draw in (1, 2):
        if verdict.status != "runs":
            break
        verdict = judge(*make(draw))
    return verdict


def activation_cases() -> list[Case]:
    cases = []
    for op in SIMPLE_OPS:
        for tname in simple.TYPES:
            for form in FORMS:
                def make(draw=0, op=op, tname=tname, form=form):
                    return _activation(op, tname, form, draw)
                cases.append(Case("activations", op, f"{tname} {form}", make,
                                  form not in ("none", "per-tensor"),
                                  functools.partial(_draws_verdict, make)))
    for op in STORED:
        for tname in ("INT8", "UINT8", "INT16"):
            for form in _DIFFERING_FORMS:
                if op.startswith("ARG") and form == "per-channel:last":
                    continue  # (ARG's variant of a per-channel form is one model)
                def make(draw=0, op=op, tname=tname, form=form):
                    return _activation(op, tname, form, draw, differing=True)
                cases.append(Case("activations", op, f"{tname} {form} differing", make, True,
                                  functools.partial(_draws_verdict, make)))
    return cases


def _perturbed(q: S.QuantizationParametersT, tname: str) -> S.QuantizationParametersT:
    """A copy of per-channel parameters whose channels after the first have scales 2.5
    times as large and zero points 40 higher (within the type's range)."""
    info = np.iinfo(_NUMPY[tname])
    out = S.QuantizationParametersT()
    scale = np.array(q.scale, np.float64)
    zp = np.array(q.zeroPoint, np.int64)
    scale[1:] *= 2.5
    zp[1:] = np.clip(zp[1:] + 40, info.min, info.max)
    out.scale, out.zeroPoint = scale.tolist(), zp.tolist()
    out.quantizedDimension = q.quantizedDimension
    return out


def _perturbed_blocks(tree: S.ModelT, sg: S.SubGraphT, q: S.QuantizationParametersT
                      ) -> S.QuantizationParametersT:
    """A copy of blockwise parameters with a scale tensor of its own, whose blocks after
    the first are 2.5 times as large."""
    old = sg.tensors[q.details.scales]
    values = np.frombuffer(bytes(tree.buffers[old.buffer].data), np.float16).copy()
    values[1:] = (values[1:].astype(np.float32) * 2.5).astype(np.float16)
    buf = S.BufferT()
    buf.data = np.frombuffer(values.tobytes(), np.uint8)
    tree.buffers.append(buf)
    t = S.TensorT()
    t.name, t.shape, t.type = f"scales{len(sg.tensors)}", list(old.shape), S.TensorType.FLOAT16
    t.buffer = len(tree.buffers) - 1
    sg.tensors.append(t)
    d = S.BlockwiseQuantizationT()
    d.scales, d.zeroPoints, d.blockSize = len(sg.tensors) - 1, -1, q.details.blockSize
    out = S.QuantizationParametersT()
    out.detailsType, out.details = S.QuantizationDetails.BlockwiseQuantization, d
    return out


def with_differing(model: bytes, op: str, tname: str, form: str) -> bytes:
    """``model`` (`with_form`'s) with one tensor's parameters off from the others': the
    output's (the second input's for a comparison, whose output is BOOL) perturbed after
    the first channel or block (`_perturbed`); for ARG_MAX and ARG_MIN, input 0's
    per-channel parameters moved to the reduced axis, or its block scales perturbed."""
    tree = S.ModelT.InitFromPackedBuf(model, 0)
    sg = tree.subgraphs[0]
    node = sg.operators[0]
    if op.startswith("ARG") and form.startswith("per-channel"):
        t = sg.tensors[node.inputs[0]]
        n = int(t.shape[1])
        q = S.QuantizationParametersT()
        q.scale, q.zeroPoint, q.quantizedDimension = _scales(0.05, n), [0] * n, 1
        t.quantization = _perturbed(q, tname)
        return serialize(ModelTree(tree))
    index = node.inputs[1] if op in simple.COMPARE else \
        node.inputs[0] if op.startswith("ARG") else node.outputs[0]
    t = sg.tensors[index]
    q = t.quantization
    t.quantization = _perturbed_blocks(tree, sg, q) if form == "blockwise" \
        else _perturbed(q, tname)
    return serialize(ModelTree(tree))


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


def int8_alpha(model: bytes, alpha: np.ndarray) -> tuple[bytes, np.ndarray]:
    """An INT16 PRELU with its alpha (input 1) made the INT8 tensor LiteRT's int16 kernel
    reads (scale 0.01), and the alpha's values clipped to it."""
    tree = S.ModelT.InitFromPackedBuf(model, 0)
    sg = tree.subgraphs[0]
    t = sg.tensors[sg.operators[0].inputs[1]]
    t.type = S.TensorType.INT8
    t.quantization = S.QuantizationParametersT()
    t.quantization.scale, t.quantization.zeroPoint = [0.01], [0]
    return serialize(ModelTree(tree)), np.clip(alpha, -127, 127).astype(np.int8)


def scale_cases() -> list[Case]:
    """Zero scales (see the module docstring).  The INT16 PRELU takes an INT8 alpha, the
    one LiteRT's int16 kernel reads (the activations family covers an INT16 alpha, which
    it reads without meaning; with a zero input scale no alpha ever counts)."""
    cases = []
    for op in SIMPLE_OPS:
        for tname, where in itertools.product(("INT8", "UINT8", "INT16"), ("input", "output")):
            def make(op=op, tname=tname, where=where):
                model, inputs = simple.build(op, tname, _seed(op, tname))
                if op == "PRELU" and tname == "INT16":
                    model, alpha = int8_alpha(model, inputs[1])
                    inputs = [inputs[0], alpha]
                zeroed = with_zero_scale(model, where)
                return (zeroed if zeroed is not None else model), inputs
            cases.append(Case("scales", op, f"{tname} zero {where} scale", make, True))
    return cases


def all_cases() -> list[Case]:
    return (activation_cases() + weight_cases() + conv_cases() + densify_cases()
            + scale_cases())
