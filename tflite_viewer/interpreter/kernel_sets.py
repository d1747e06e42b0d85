"""Which of LiteRT's kernel sets the interpreter computes as, float op by float op.

LiteRT ships every builtin op twice: its **reference** kernels (``BuiltinRefOpResolver``,
``OpResolverType.BUILTIN_REF``: plain loops, the specification) and its **builtin**
kernels (``BuiltinOpResolver``; ``BUILTIN_WITHOUT_DEFAULT_DELEGATES`` runs them without
the XNNPACK delegate), each op's ``Eval<kernel_type>`` choosing ``kReference`` or
``kGenericOptimized``.  For most ops the two compute the same bits.  For these float32
ops they do not, and ``Interpreter(model, kernels=...)`` says which one to follow:

=================  ====================================  =====================================
op                 reference                             builtin
=================  ====================================  =====================================
LOGISTIC           1 / (1 + expf(-x)), cut-offs          Eigen's logistic (`eigen_float`)
TANH               tanh                                  Eigen's rational tanh
SOFTMAX            expf, one sum after another           Eigen's exp and vectorized sums
MEAN               one sum in memory order from 0        Eigen's row sums over the last axis,
                                                         else memory order from the first
SUM                memory order from 0                   memory order from the first
FULLY_CONNECTED    one product after another             Eigen's matrix times vector (1 row)
=================  ====================================  =====================================

SIN, COS, GELU, RSQRT, EXP, POW and BATCH_MATMUL are one kernel in both sets (C's
``sinf``/``cosf``, Eigen's GELU expression, a sequential dot product), and every integer
kernel of this interpreter follows the reference set whichever is chosen.

A third set, ``xnnpack``, is what LiteRT runs by default (``OpResolverType.BUILTIN``, its
XNNPACK delegate applied) and what LiteRT-LM runs on a phone's CPU: the operators the
delegate takes (`tflite_viewer.delegation.xnnpack`: its checks and LiteRT's partitions)
compute as XNNPACK's microkernels do (`xnnpack_float`, `xnnpack_gemm`,
`xnnpack_kernels`), every other operator as the builtin set.  Its results depend on the
CPU XNNPACK picks its microkernels for; this reproduces those of an x86-64 CPU with
AVX-512 and AVX512-VNNI (docs/debugging.md says which ops an AVX2 CPU computes otherwise).

``auto`` (the default) takes the builtin set for a model the reference set cannot be the
oracle of: one LiteRT's reference kernels compute wrong (`reference_lacks`: blockwise
weights, where the reference FULLY_CONNECTED returns the bias) or an LLM export (prefill and
decode signatures: LiteRT-LM and LiteRT's generation loops run the builtin kernels, or
XNNPACK, never the reference ones).  Every other model takes the reference set, as the
project always has: its cross-check against LiteRT's reference kernels stays exact.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..delegation.xnnpack import Delegated
    from ..model import Model

AUTO, REFERENCE, BUILTIN, XNNPACK = "auto", "reference", "builtin", "xnnpack"
MODES = (AUTO, REFERENCE, BUILTIN, XNNPACK)
#: the LiteRT op resolver type of each kernel set (the cross-check's oracle): BUILTIN is
#: LiteRT's default, with the XNNPACK delegate applied
RESOLVERS = {REFERENCE: "BUILTIN_REF", BUILTIN: "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
             XNNPACK: "BUILTIN"}


def reference_lacks(model: "Model") -> str | None:
    """Why LiteRT's reference kernels cannot be the oracle of ``model`` (None: they can):
    its reference FULLY_CONNECTED has no blockwise path and returns the bias alone for
    blockwise INT4 weights, which its builtin kernel (EvalBlockwise4Bit) computes."""
    for sg in model.subgraphs:
        for op in sg.operators:
            if op.opcode.name != "FULLY_CONNECTED" or len(op.inputs) < 2 or op.inputs[1] < 0:
                continue
            q = sg.tensors[op.inputs[1]].quantization
            if q is not None and q.blockwise is not None:
                return (f"subgraph {sg.index} op {op.index}: LiteRT's reference "
                        "FULLY_CONNECTED has no blockwise path (it returns the bias), so its "
                        "builtin kernels are the oracle")
    return None


def generative(model: "Model") -> bool:
    """Whether the model is an LLM export: a ``decode`` signature beside a ``prefill*``
    one (litert-torch's names, the ones the generation loop looks for)."""
    keys = [s.key for s in model.signature_defs]
    return any(k.startswith("decode") for k in keys) and \
        any(k.startswith("prefill") for k in keys)


def why_builtin(model: "Model") -> str | None:
    """Why ``auto`` takes the builtin kernels for ``model`` (None: it takes the reference
    ones)."""
    lacks = reference_lacks(model)
    if lacks is not None:
        return "blockwise weights: LiteRT's reference FULLY_CONNECTED has no blockwise path"
    if generative(model):
        return "an LLM export (prefill and decode signatures): its runtimes run the builtin kernels"
    return None


def resolve(mode: str, model: "Model") -> str:
    """``reference``, ``builtin`` or ``xnnpack``: the mode itself, or what ``auto`` takes
    for ``model`` (never ``xnnpack``: it is asked for)."""
    if mode not in MODES:
        raise ValueError(f"kernels must be one of {', '.join(MODES)}, not {mode!r}")
    if mode != AUTO:
        return mode
    return BUILTIN if why_builtin(model) is not None else REFERENCE


def builtin(ctx) -> bool:
    """Whether the node's interpreter computes as LiteRT's builtin kernels (``ctx`` is the
    runtime subgraph a kernel gets): under the builtin set, and under the xnnpack set for
    the operators XNNPACK leaves to them (those it takes go through `xnnpack_partition`
    first)."""
    return ctx.interpreter.kernels in (BUILTIN, XNNPACK)


def delegated(mode: str, model: "Model") -> "Delegated | None":
    """The operators XNNPACK takes under the ``xnnpack`` set (None under another set):
    LiteRT 2.3.0's delegate checks and partitions, read from the file
    (`delegation.xnnpack.delegated_ops`)."""
    if mode != XNNPACK:
        return None
    from ..delegation.facts import ModelFacts
    from ..delegation.xnnpack import delegated_ops
    return delegated_ops(ModelFacts(model))


def xnnpack_partition(ctx, node) -> int | None:
    """The XNNPACK partition a node runs in under the ``xnnpack`` set (None: it runs on
    LiteRT's own kernels, or another set is followed)."""
    taken = ctx.interpreter.xnnpack
    return None if taken is None else taken.partition(node.subgraph, node.index)


__all__ = ["AUTO", "BUILTIN", "MODES", "REFERENCE", "RESOLVERS", "XNNPACK", "builtin",
           "delegated", "generative", "reference_lacks", "resolve", "why_builtin",
           "xnnpack_partition"]
