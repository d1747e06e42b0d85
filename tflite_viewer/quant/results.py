"""What an analysis found: `TensorReport` per activation, `QuantReport` for the model.

Every activation and weight names the signature whose run measured it (the entry of
`runner.entries` that covers its subgraph), so a decoder's report reads per signature
(``prefill_8``, ``decode``) rather than per subgraph index.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from ..model import Model
from .activations import ActivationStats, new_stats
from .fallback import FallbackGain
from .forms import widened_tensors
from .metrics import badness
from .pairing import Pairing, is_real
from .spec import SpecFinding
from .weights import WeightReport

#: How the analysis's interpreters add float32 CONV_2D and FULLY_CONNECTED products
#: (`interpreter.float_sums`): BLAS's order, for both models and the fallback's float ops.
#: What is measured here is quantization error, 1e-2 to 1e-5 of a tensor's values; the
#: order of a float sum moves them by about 1e-7, and moves both models alike where they
#: compute the same float ops, so an op left in float still compares exactly.  LiteRT's
#: optimized and XNNPACK kernels, which ai-edge-quantizer's validator runs the pair on, do
#: not add in the reference order either.  The reference order costs 2.6 times as much per
#: float run (mobilenet_v2: 7.8 ms against 3.0 ms).  ``analyze(float_sums="reference")``
#: (``quant --float-sums reference``) gives the reference kernels' bits.
FLOAT_SUMS = "blas"


@dataclass
class TensorReport:
    """One activation of the quantized model and what was measured on it."""

    tensor: int
    name: str
    type_name: str
    shape: tuple[int, ...]
    op: int | None                    # the producing op (None: a model input)
    opcode: str
    float_tensor: int | None = None
    paired_by: str | None = None
    metrics: dict[str, Any] | None = None
    per_input: list[dict[str, Any]] = field(default_factory=list)
    activation: ActivationStats | None = None
    #: the first sample's values (float, dequantized), for the window's side-by-side view
    sample_values: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    subgraph: int = 0
    float_subgraph: int | None = None
    signature: str | None = None       # the signature whose run measured it
    #: litert_quantizer's validator metrics per input and averaged (`explorer`), when
    #: the analysis was asked for them
    validator_per_input: list[dict[str, float]] = field(default_factory=list, repr=False)
    validator: dict[str, float] | None = None

    @property
    def key(self) -> tuple[int, int]:
        return (self.subgraph, self.tensor)

    def to_dict(self, per_input: bool = True) -> dict[str, Any]:
        d = {"subgraph": self.subgraph, "signature": self.signature,
             "tensor": self.tensor, "name": self.name,
             "type_name": self.type_name, "shape": list(self.shape), "op": self.op,
             "opcode": self.opcode, "float_subgraph": self.float_subgraph,
             "float_tensor": self.float_tensor, "paired_by": self.paired_by,
             "metrics": self.metrics}
        if per_input:
            d["per_input"] = self.per_input
        if self.activation is not None:
            d["activation"] = self.activation.to_dict()
        if self.validator is not None:
            d["validator"] = self.validator
        return d


@dataclass
class QuantReport:
    model: str
    float_model: str | None
    samples: int
    findings: list[SpecFinding]
    weights: list[WeightReport]
    tensors: list[TensorReport]
    unpaired_quantized: list[dict[str, Any]] = field(default_factory=list)
    unpaired_float: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] | None = None           # model outputs: sqnr/cosine per input
    fallback: list[FallbackGain] = field(default_factory=list)
    #: the outputs' quality of every run (`runner.entries`); ``outputs`` is the first's
    entry_outputs: list[dict[str, Any]] = field(default_factory=list)
    float_sums: str = FLOAT_SUMS  # the interpreters' (`FLOAT_SUMS`)
    #: how many weights have each form (`forms.summary`)
    forms: list[dict[str, Any]] = field(default_factory=list)
    #: the Hadamard rotations found (`rotations.Rotation.to_dict`), paired with float ops
    rotations: list[dict[str, Any]] = field(default_factory=list)
    #: ops of the quantized model the float model has no partner for, other than the
    #: QUANTIZE/DEQUANTIZE ops quantization inserts and the rotations: {subgraph, op,
    #: opcode, why}
    added_ops: list[dict[str, Any]] = field(default_factory=list)
    #: why the models were not run (the interpreter refuses an op): only the files were
    #: analysed (spec, weights)
    not_run: str | None = None

    @property
    def errors(self) -> list[SpecFinding]:
        return [f for f in self.findings if f.severity == "error"]

    def compared(self) -> list[TensorReport]:
        return [t for t in self.tensors if t.metrics is not None]

    def ranked(self, metric: str = "sqnr_db") -> list[TensorReport]:
        """Compared tensors, worst first by ``metric``."""
        return sorted(self.compared(), key=lambda t: (
            -badness(metric, t.metrics.get(metric)), t.subgraph, -1 if t.op is None else t.op,
            t.tensor))

    def tensor(self, index: int, subgraph: int = 0) -> TensorReport | None:
        return next((t for t in self.tensors if t.tensor == index and t.subgraph == subgraph),
                    None)

    def signatures(self) -> list[str | None]:
        """The signatures run, in order (None: a model without signatures)."""
        return [o["signature"] for o in self.entry_outputs]

    def validator_results(self) -> Iterator[tuple[str, dict[str, float]]]:
        """(tensor name, validator metrics) of each signature's subgraph in run order:
        its weights, then its compared activations, each in tensor order (the order in
        which litert_quantizer's validator lets a later tensor of one name win)."""
        for o in self.entry_outputs:
            k = o["subgraph"]
            for w in self.weights:
                if w.subgraph == k and w.validator is not None:
                    yield w.name, w.validator
            for t in sorted(self.tensors, key=lambda t: t.tensor):
                if t.subgraph == k and t.validator is not None:
                    yield t.name, t.validator

    def fallback_for(self, op: int | None, subgraph: int = 0) -> FallbackGain | None:
        return next((g for g in self.fallback if g.op == op and g.subgraph == subgraph), None)

    def to_dict(self) -> dict[str, Any]:
        return finite({
            "model": self.model, "float_model": self.float_model, "samples": self.samples,
            "findings": [f.to_dict() for f in self.findings],
            "weights": [w.to_dict() for w in self.weights],
            "tensors": [t.to_dict() for t in self.ranked()] + [
                t.to_dict() for t in self.tensors if t.metrics is None],
            "unpaired_quantized": self.unpaired_quantized,
            "unpaired_float": self.unpaired_float,
            "outputs": self.outputs,
            "entry_outputs": self.entry_outputs,
            "fallback": [g.to_dict() for g in self.fallback],
            "float_sums": self.float_sums,
            "forms": self.forms,
            "rotations": self.rotations,
            "added_ops": self.added_ops,
            "not_run": self.not_run,
        })

    def to_json(self, indent: int | None = 1) -> str:
        import json
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)


def finite(obj: Any) -> Any:
    """Strict-JSON values: non-finite floats become None (an SQNR of +inf means no error at
    all, which max_abs_error 0 in the same row says)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (np.floating,)):
        return finite(float(obj))
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def tensor_reports(qm: Model, pairing: Pairing | None) -> dict[tuple[int, int], TensorReport]:
    """A report for every real-valued activation of every subgraph (not the weights a
    DEQUANTIZE widens: `weights` compares those)."""
    reports: dict[tuple[int, int], TensorReport] = {}
    for qsg in qm.subgraphs:
        producer = {o: op.index for op in qsg.operators for o in op.outputs if o >= 0}
        skip = widened_tensors(qsg)
        for t in qsg.tensors:
            if t.is_constant or not is_real(t) or t.index in skip:
                continue
            op = producer.get(t.index)
            rep = TensorReport(t.index, t.name, t.type_name, tuple(t.shape), op,
                               qsg.operators[op].opcode.name if op is not None else "input",
                               subgraph=qsg.index)
            rep.activation = new_stats(t)
            if pairing is not None and (qsg.index, t.index) in pairing.tensors:
                (rep.float_subgraph, rep.float_tensor), rep.paired_by = \
                    pairing.tensors[(qsg.index, t.index)]
            reports[(qsg.index, t.index)] = rep
    return reports
