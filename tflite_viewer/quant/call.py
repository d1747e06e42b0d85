"""Two models' tensors paired and measured on the inputs of one call.

`analyze` measures each sample of each signature this way; an analysis across a
generation measures each step: both models called with their own inputs (each its own
KV cache), every paired tensor measured, each model's outputs handed back to feed its
next step.

>>> pc = PairedCall(quantized, float_model, signature="decode")
>>> got = pc.measure({"tokens": t, "input_pos": p, **q_cache}, {"tokens": t, ...})
>>> got.rows[(1, 152)]["sqnr_db"]          # each paired tensor's metrics on this call
>>> got.quantized["logits"], got.float["logits"]   # each model's signature outputs
>>> pc.reports[(1, 152)].name              # what each measured tensor is

Inputs are given by signature input name (any alias `interpreter.inputs` accepts), in
real values or, for a quantized input, in its own integer type (a model's own output fed
back); each model takes them in its own types.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..model import Model
from . import samples as smp
from .pairing import Pairing, pair_models
from .per_sample import Analysis, measure_call
from .plan import float_entry, make_run
from .results import FLOAT_SUMS, TensorReport, tensor_reports
from .runner import first_entry

Key = tuple[int, int]


@dataclass
class CallMeasurement:
    """What one call measured: per paired tensor, the metrics of `metrics` (and the
    validator's, when asked for); the outputs' SQNR and cosine; each model's signature
    outputs by name, in the model's own types (copies: they outlive the next call)."""

    rows: dict[Key, dict[str, Any]]
    validator: dict[Key, dict[str, float]]
    outputs: dict[str, float] | None
    quantized: dict[str, np.ndarray]
    float: dict[str, np.ndarray]


class PairedCall:
    """A quantized model and its float original, paired once, called together on one
    entry (``signature``, else subgraph 0's) as often as wanted."""

    def __init__(self, quantized: Model, float_model: Model, signature: str | None = None,
                 *, pairing: Pairing | None = None, backend: str = "interpreter",
                 float_sums: str = FLOAT_SUMS, validator: bool = False) -> None:
        self.quantized, self.float_model = quantized, float_model
        self.pairing = pairing if pairing is not None else pair_models(quantized, float_model)
        entry = first_entry(quantized, signature)
        fe = float_entry(quantized, float_model, entry, self.pairing)
        if fe is None:
            raise ValueError(f"the float model has no counterpart of {entry.label}")
        self.entry, self.float_entry = entry, fe
        self.run = make_run(quantized, float_model, self.pairing, entry, fe, backend,
                            float_sums, entry.reached, [])
        self.reports: dict[Key, TensorReport] = {
            k: r for k, r in tensor_reports(quantized, self.pairing).items()
            if k[0] in entry.reached}
        self._analysis = Analysis(quantized, [self.run], self.reports, None, {id(self.run): []},
                                  False, validator)

    def measure(self, q_inputs: Mapping[str, Any],
                f_inputs: Mapping[str, Any] | None = None) -> CallMeasurement:
        """Call both models (the float one on ``f_inputs``, else on ``q_inputs``) and
        measure every paired tensor of the subgraphs the entry runs."""
        q_sample = smp.given_samples(self.quantized, [q_inputs], self.entry.signature)[0]
        f_sample = smp.given_samples(self.float_model, [q_inputs if f_inputs is None
                                                        else f_inputs],
                                     self.float_entry.signature)[0]
        res, qt, ft = measure_call(self._analysis, self.run, q_sample, f_sample)
        return CallMeasurement(res.rows, res.validator, res.outputs,
                               _outputs(self.quantized, self.entry, qt),
                               _outputs(self.float_model, self.float_entry, ft))


def _outputs(model: Model, entry, values: dict) -> dict[str, np.ndarray]:
    """The entry's outputs by signature output name (tensor name without a signature)."""
    sg = model.subgraphs[entry.subgraph]
    if entry.signature is not None:
        named = [(m.name, m.tensor_index) for m in model.signature(entry.signature).outputs]
    else:
        named = [(sg.tensors[i].name, i) for i in sg.outputs]
    return {name: np.array(values[(entry.subgraph, i)]) for name, i in named
            if (entry.subgraph, i) in values}
