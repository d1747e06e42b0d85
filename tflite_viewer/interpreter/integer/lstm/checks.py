"""Which LSTM nodes the integer 8x8_16 kernel runs: LiteRT's Prepare checks, and the cases
whose results depend on something the core does not model, each refused with a reason."""
from __future__ import annotations

import numpy as np

from ..elementwise import checked_log2
from .parameters import (BIAS, GATE_ORDER, LN, PEEP, PROJ_B, PROJ_W, STATE_C, STATE_H, W_H, W_X,
                         uses_layer_norm)


def _quantized(t) -> bool:
    q = getattr(t, "quantization", None)
    return q is not None and q.scale.size > 0


def gate_tensors_problem(tensors: dict, cifg: bool, ok, cifg_extra: str,
                         missing: str) -> str | None:
    """The first problem with one per-gate kind of LSTM tensor (biases, layer-norm weights),
    given by gate ("i", "f", "c", "o"): a CIFG LSTM has none for its input gate
    (``cifg_extra`` if it does); every other gate needs one that passes ``ok`` (else
    ``missing``, formatted with ``gate``).  The integer and the hybrid LSTM check alike."""
    for g, t in tensors.items():
        if g == "i" and cifg:
            if t is not None:
                return cifg_extra
            continue
        if t is None or not ok(t):
            return missing.format(gate=g)
    return None


def unsupported_reason(inputs, intermediates, output, options, name: str) -> str | None:
    """Why the integer 8x8_16 kernel cannot run this node (LiteRT's Prepare would fail,
    read out of bounds, or its results depend on something this core does not model),
    or None.  ``inputs``/``intermediates`` are runtime tensors (None where absent)."""
    if len(inputs) not in (20, 24):
        return f"{name} needs 20 or 24 inputs (got {len(inputs)})"
    x = inputs[0]
    if x.shape is None or len(x.shape) != 3:
        return f"{name} needs a rank-3 input"
    if len(intermediates) != 5:
        return f"{name} needs 5 intermediate tensors (got {len(intermediates)})"
    hs, cs = inputs[STATE_H], inputs[STATE_C]
    if hs is None or cs is None:
        return f"{name} needs output and cell state tensors"
    if cs.type_name != "INT16":
        return f"{name} needs an INT16 cell state"
    if hs.type_name != "INT8":
        return f"{name} needs an INT8 output state"
    for g in GATE_ORDER:
        for k in (W_X[g], W_H[g]):
            t = inputs[k]
            if t is None:
                if g != "i":
                    return f"{name}: input {k} (gate {g} weights) is missing"
                continue
            if t.type_name != "INT8" or len(t.shape) != 2:
                return f"{name}: input {k} must be 2-D INT8 weights (got {t.type_name})"
            if t.quantization is not None and t.quantization.scale.size > 1:
                return (f"{name}: per-channel weights (input {k}): LiteRT's integer LSTM "
                        "reads the per-tensor scale, which is 0 for them")
    cifg = inputs[W_X["i"]] is None
    if cifg != (inputs[W_H["i"]] is None):
        return f"{name}: input gate weights must be all present or all absent"
    n_cell, n_output = inputs[W_X["f"]].shape[0], inputs[W_H["f"]].shape[1]
    problem = gate_tensors_problem({g: inputs[BIAS[g]] for g in GATE_ORDER}, cifg,
                                   lambda t: t.type_name == "INT32",
                                   f"{name}: a CIFG LSTM has no input gate bias",
                                   f"{name}: gate {{gate}} needs an INT32 bias")
    if problem:
        return problem
    peep = {g: inputs[k] for g, k in PEEP.items()}
    use_peephole = peep["o"] is not None
    need = {g for g in ("i", "f", "o") if not (g == "i" and cifg)}
    if use_peephole or any(t is not None for t in peep.values()):
        if any(peep[g] is None for g in need):
            return f"{name}: peephole weights must be all present or all absent"
        if any(peep[g].type_name != "INT16" for g in need):
            return f"{name}: peephole weights must be INT16"
        if n_output > n_cell:
            return (f"{name}: peephole with {n_output} outputs > {n_cell} cells: LiteRT "
                    "reads past the peephole weights")
    if uses_layer_norm(inputs):
        problem = gate_tensors_problem(
            {g: inputs[LN[g]] for g in GATE_ORDER}, cifg, lambda t: t.type_name == "INT16",
            f"{name}: a CIFG LSTM has no input layer norm coefficients",
            f"{name}: layer norm needs INT16 coefficients for gate {{gate}}")
        if problem:
            return problem
        if not all(_quantized(t) for t in intermediates[:4]):
            return f"{name}: layer normalization needs quantized gate intermediates"
    pw, pb = inputs[PROJ_W], inputs[PROJ_B]
    if pw is None:
        if pb is not None:
            return f"{name}: projection bias without projection weights"
        if n_output != n_cell:
            return f"{name}: {n_output} outputs for {n_cell} cells without projection"
    else:
        if pw.type_name != "INT8" or tuple(pw.shape) != (n_output, n_cell):
            return f"{name}: projection weights must be INT8 [{n_output}, {n_cell}]"
        if pw.quantization is not None and pw.quantization.scale.size > 1:
            return f"{name}: per-channel projection weights"
        if pb is not None and pb.type_name != "INT32":
            return f"{name}: projection bias must be INT32"
    if not _quantized(intermediates[4]):
        return f"{name}: the hidden intermediate tensor needs quantization"
    if not _quantized(output) or not _quantized(cs) or not _quantized(hs):
        return f"{name}: output and state tensors need quantization"
    ok, cell_scale = checked_log2(float(np.float32(cs.quantization.scale.reshape(-1)[0])))
    if not ok:
        return f"{name}: the cell state scale is not a power of two"
    if not 0 <= 15 + cell_scale <= 6:
        return (f"{name}: cell state scale 2^{cell_scale}: LiteRT's ApplyTanh handles scales "
                "2^-15 to 2^-9 only")
    return None
