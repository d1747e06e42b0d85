"""A `QuantReport` as text (the CLI's), as CSV rows, and its table columns.

The CSV has one row per activation of the quantized model, compared ones first, worst
first by SQNR; every metric column is the average over samples, then the activation's
range use, the op's own (layer) error and its float fallback gain when measured.
"""
from __future__ import annotations

import csv
import io
import math
from typing import Any

from .forms import WEIGHT_FIELDS, WeightForm
from .metrics import METRICS
from .results import QuantReport, TensorReport

CSV_COLUMNS = ("subgraph", "tensor", "name", "signature", "op", "opcode", "type", "shape", "float_subgraph",
               "float_tensor", "paired_by",
               *METRICS, "at_min_fraction", "at_max_fraction", "unused_fraction",
               "float_below_fraction", "float_above_fraction", "layer_sqnr_db",
               "fallback_gain_db", "fallback_cosine_gain")


def row(report: QuantReport, t: TensorReport) -> dict[str, Any]:
    """One table row: plain values (None where not measured)."""
    r: dict[str, Any] = {"signature": t.signature, "subgraph": t.subgraph,
                         "tensor": t.tensor, "name": t.name,
                         "op": t.op, "opcode": t.opcode, "type": t.type_name,
                         "shape": "x".join(map(str, t.shape)),
                         "float_subgraph": t.float_subgraph, "float_tensor": t.float_tensor,
                         "paired_by": t.paired_by}
    for k in METRICS:
        r[k] = t.metrics.get(k) if t.metrics else None
    act = t.activation.to_dict() if t.activation is not None and t.activation.count else {}
    for k in ("at_min_fraction", "at_max_fraction", "unused_fraction", "float_below_fraction",
              "float_above_fraction"):
        r[k] = act.get(k)
    g = report.fallback_for(t.op, t.subgraph) if t.op is not None else None
    r["layer_sqnr_db"] = g.local.get("sqnr_db") if g is not None and g.local else None
    r["fallback_gain_db"] = g.gain_db if g is not None else None
    r["fallback_cosine_gain"] = g.cosine_gain if g is not None else None
    return r


def rows(report: QuantReport) -> list[dict[str, Any]]:
    ranked = report.ranked()
    seen = {t.key for t in ranked}
    return [row(report, t) for t in ranked] + [row(report, t) for t in report.tensors
                                               if t.key not in seen]


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")
    return str(v)


def to_csv(report: QuantReport) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in rows(report):
        w.writerow([_cell(r[c]) for c in CSV_COLUMNS])
    return buf.getvalue()


def _num(v: Any, fmt: str = ".4g") -> str:
    if v is None:
        return "-"
    return format(v, fmt) if isinstance(v, float) and math.isfinite(v) else str(v)


#: a weight form's short name in the text table
_FORM_SHORT = {"per-tensor": "tensor", "per-channel": "channel", "float16": "fp16",
               "bfloat16": "bf16"}


def _short(name: str, width: int = 50) -> str:
    """A tensor name cut to ``width`` from the left: a converter's names share long
    prefixes and differ at the end (``...Linear_qkv_projection;``)."""
    return name if len(name) <= width else "..." + name[-(width - 3):]


def _where(signature: str | None) -> str:
    return f"signature {signature!r}" if signature is not None else "the model"


def _weights_text(report: QuantReport) -> list[str]:
    out = [f"\nweights: {len(report.weights)}"]
    out += [f"  {f['count']:>4} x {WeightForm(**{k: f[k] for k in WEIGHT_FIELDS}).describe()}"
            for f in report.forms]
    out.append(f"  {'signature':12} {'sg':>3} {'tensor':>6} {'type':8} {'form':7} {'chan':>5} "
               f"{'used min':>8} {'at lim':>6} {'scale max/med':>13} {'tiny':>4} "
               f"{'sqnr dB':>8} {'worst dB':>8} {'worst unit':22} name")
    for w in report.weights:
        used = min(w.used_fraction) if w.used_fraction else None
        sq = w.metrics.get("sqnr_db") if w.metrics else None
        form = w.form.form if w.form is not None else "-"
        form = f"b{w.form.block_size}" if form == "blockwise" else _FORM_SHORT.get(form, form)
        if w.rotation:
            form += "+H"
        worst = w.worst or {}
        unit = f"{worst['unit']} {worst['elements']}" if worst else "-"
        out.append(f"  {str(w.signature or '-')[:12]:12} {w.subgraph:>3} {w.tensor:>6} "
                   f"{w.type_name:8} {form:7} {w.channels:>5} {_num(used, '.3f'):>8} "
                   f"{w.at_min + w.at_max:>6} {_num(w.scale_outlier_ratio, '.3g'):>13} "
                   f"{len(w.tiny_channels):>4} {_num(sq, '.2f'):>8} "
                   f"{_num(worst.get('sqnr_db'), '.2f'):>8} {unit[:22]:22} {_short(w.name)}")
    return out


def _activations_text(report: QuantReport, limit: int) -> list[str]:
    table = rows(report)
    out = []
    signatures = report.signatures() or [None]
    for sig in signatures:
        mine = [r for r in table if r["signature"] == sig] if len(signatures) > 1 else table
        out.append(f"\nactivations of {_where(sig)}"
                   + (" (worst SQNR first)" if report.float_model else "") + ":")
        out.append(f"  {'sg':>3} {'op':>4} {'opcode':18} {'tensor':>6} {'sqnr dB':>8} "
                   f"{'cosine':>8} {'rmse/scale':>10} {'max abs':>9} {'mdr':>7} {'clip lo':>7} "
                   f"{'clip hi':>7} {'layer dB':>8} {'gain dB':>8}")
        for r in mine[:limit]:
            out.append(f"  {r['subgraph']:>3} {_num(r['op']):>4} {r['opcode'][:18]:18} "
                       f"{r['tensor']:>6} {_num(r['sqnr_db'], '.2f'):>8} "
                       f"{_num(r['cosine'], '.5f'):>8} {_num(r['rmse_scale'], '.3f'):>10} "
                       f"{_num(r['max_abs_error'], '.3g'):>9} "
                       f"{_num(r['median_diff_ratio'], '.3f'):>7} "
                       f"{_num(r['at_min_fraction'], '.3f'):>7} "
                       f"{_num(r['at_max_fraction'], '.3f'):>7} "
                       f"{_num(r['layer_sqnr_db'], '.2f'):>8} "
                       f"{_num(r['fallback_gain_db'], '.2f'):>8}")
        if len(mine) > limit:
            out.append(f"  ... {len(mine) - limit} more (see --csv / --json)")
    return out


def _pairing_text(report: QuantReport) -> list[str]:
    out = []
    if report.rotations:
        sizes = sorted({r["size"] for r in report.rotations})
        out.append(f"\nHadamard rotations: {len(report.rotations)} (sizes "
                   f"{', '.join(map(str, sizes))}), each paired with the float op it serves")
    if report.added_ops:
        out.append(f"\nadded ops (no float partner): {len(report.added_ops)}")
        out += [f"  sg {a['subgraph']} op {a['op']} {a['opcode']}: {a['why']}"
                for a in report.added_ops[:20]]
    if report.unpaired_quantized or report.unpaired_float:
        out.append(f"\nunpaired: {len(report.unpaired_quantized)} quantized, "
                   f"{len(report.unpaired_float)} float tensor(s)")
        out += [f"  quantized s{u['subgraph']} t{u['tensor']}: {u['name']}"
                for u in report.unpaired_quantized[:20]]
        out += [f"  float s{u['subgraph']} t{u['tensor']}: {u['name']}"
                for u in report.unpaired_float[:20]]
    return out


def format_text(report: QuantReport, limit: int = 40) -> str:
    """The CLI's report: findings, the weights, the activations of each signature worst
    first, rotations and what stayed unpaired, the outputs' quality per signature, the
    fallback gains (``limit`` rows per table)."""
    out = [f"model: {report.model}"]
    if report.float_model:
        out.append(f"float model: {report.float_model}  ({report.samples} samples)")
    if report.not_run:
        out.append(f"not run: {report.not_run}; the files alone are analysed")
    out.append(f"\nspec findings: {len(report.errors)} error(s), "
               f"{len(report.findings) - len(report.errors)} warning(s)")
    out += [f"  {f}" for f in report.findings]
    out += _weights_text(report)
    if not report.not_run:
        out += _activations_text(report, limit)
    out += _pairing_text(report)
    for o in report.entry_outputs:
        out.append(f"\nmodel outputs of {_where(o['signature'])} (subgraph {o['subgraph']}): "
                   f"SQNR {_num(o['sqnr_db'], '.2f')} dB, cosine {_num(o['cosine'], '.6f')}")
    if report.fallback:
        out.append("\nper-layer float fallback (largest gain first):")
        for g in report.fallback[:limit]:
            extra = f"  ({g.error})" if g.error else ""
            out.append(f"  sg {g.subgraph:>2} op {g.op:>4} {g.opcode:18} gain {_num(g.gain_db, '.3f'):>8} dB  "
                       f"cosine gain {_num(g.cosine_gain, '.2e'):>9}  weights: {g.weights}{extra}")
    return "\n".join(out) + "\n"


# -- for the window (plain numbers; the widgets only draw them) ----------------------------
OVERLAY_METRICS = ("sqnr_db", "cosine", "rmse_scale", "max_abs_error", "median_diff_ratio",
                   "layer_sqnr_db", "fallback_gain_db")


def op_values(report: QuantReport, metric: str, subgraph: int = 0) -> dict[int, float]:
    """The value of ``metric`` for every op of ``subgraph`` whose output was measured (its
    first real output's row), by op index."""
    out: dict[int, float] = {}
    for r in rows(report):
        v = r.get(metric)
        if r["subgraph"] == subgraph and r["op"] is not None and r["op"] not in out and v is not None and math.isfinite(v):
            out[r["op"]] = float(v)
    return out


def badness_fractions(values: dict[int, float], metric: str) -> dict[int, float]:
    """Each value placed on [0, 1], 1 the worst (red) and 0 the best, linearly between the
    extremes.  Worst is the lowest SQNR / cosine, the highest error, and for the fallback
    gain the largest gain (the layer that most needs attention)."""
    if not values:
        return {}
    higher_is_worse = metric in ("rmse_scale", "max_abs_error", "median_diff_ratio",
                                 "fallback_gain_db", "mean_squared_error", "stddev")
    lo, hi = min(values.values()), max(values.values())
    span = hi - lo
    out = {}
    for op, v in values.items():
        t = 0.5 if span == 0 else (v - lo) / span
        out[op] = t if higher_is_worse else 1.0 - t
    return out


def comparison_histograms(reference, dequantized, bins: int = 48):
    """(edges, float counts, dequantized counts) on shared bins, and (edges, counts) of the
    error dequantized - float: what the window overlays for one tensor."""
    import numpy as np
    f = np.asarray(reference, np.float64).ravel()
    q = np.asarray(dequantized, np.float64).ravel()
    lo = float(min(f.min(), q.min())) if f.size else 0.0
    hi = float(max(f.max(), q.max())) if f.size else 1.0
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, bins + 1)
    fc, _ = np.histogram(f, edges)
    qc, _ = np.histogram(q, edges)
    err = q - f
    elo, ehi = (float(err.min()), float(err.max())) if err.size else (0.0, 1.0)
    if ehi <= elo:
        elo, ehi = elo - 0.5, ehi + 0.5
    ec, eedges = np.histogram(err, bins=bins, range=(elo, ehi))
    return (edges, fc, qc), (eedges, ec)
