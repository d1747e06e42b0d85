"""Op coverage: the interpreter's builtin kernels against LiteRT's builtin op resolver.

`LITERT_BUILTINS` (generated from LiteRT's register.cc, version ranges confirmed on the
installed wheel) says what LiteRT runs; the `BuiltinOpResolver` says what runs here.  Every
LiteRT op or version not covered here needs a written reason in `MISSING` or
`VERSION_GAPS` (tests/interpreter/test_op_coverage.py fails otherwise, and fails on a reason
left for an op that is now covered).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..schema.schema_generated import BuiltinOperator
from .litert_builtins import LITERT_BUILTINS
from .op_resolver import BuiltinOpResolver, OpResolver

#: LiteRT builtins with no kernel here, and why.
MISSING: dict[str, str] = {
}

_F8 = ("FLOAT8 tensors (op_version.cc): the ai-edge-litert 2.3.0 wheel resolves this "
       "version but its kernel refuses FLOAT8 tensors (measured), so it is refused here too")
#: LiteRT builtins covered here for fewer versions than LiteRT resolves: what the missing
#: versions add (from LiteRT's op_version.cc) and why they are not run here.
VERSION_GAPS: dict[str, str] = {
    "CAST": "v9: FLOAT8 in or out; the wheel resolves it but its kernel refuses FLOAT8 "
            "(measured both ways)",
    "CONCATENATION": f"v7: {_F8}",
    "DEQUANTIZE": "v9: FLOAT8 input; the wheel resolves it but its Prepare refuses FLOAT8 "
                  "(measured)",
    "GATHER": f"v8: {_F8}",
    "GATHER_ND": f"v6: {_F8}",
    "PACK": f"v5: {_F8}",
    "PAD": f"v6: {_F8}",
    "PADV2": f"v6: {_F8} (measured on PAD, the same kernel)",
    "REVERSE_V2": f"v4: {_F8}",
    "SPLIT": f"v5: {_F8}",
    "SPLIT_V": f"v3: {_F8}",
    "UNPACK": f"v6: {_F8}",
}

#: Type paths LiteRT's builtin kernels run that are refused here, found by
#: tools/sweep_op_types.py (which sweeps unary, binary, comparison, reduction and data
#: movement ops over FLOAT32, FLOAT16, INT8/UINT8/INT16 quantized, INT32, INT64, BOOL, and
#: the conv and pool families over every type configuration and version).  All are
#: refused on purpose: LiteRT's result is undefined there.
_BIAS32 = ("int16x8 with an INT32 bias but no quantized_bias_type INT32 in the options: "
           "LiteRT reads the bias as INT64, past its end (with the option set it runs)")
TYPE_GAPS: dict[str, str] = {
    "CONV_2D": _BIAS32,
    "TRANSPOSE_CONV": _BIAS32,
    "DEPTHWISE_CONV_2D": "hybrid with one filter scale for several channels: LiteRT's "
                         "hybrid kernel reads one scale per channel, past the single one "
                         "(one scale per channel runs)",
    "PRELU": "INT16 input with an INT16 alpha: LiteRT's int16 kernel reads the alpha as "
             "INT8, so its result is undefined there",
}


#: Refusals the refusal audit (tests/interpreter/test_refusal_audit.py) finds false (LiteRT
#: 2.3.0's builtin kernels compute the case with meaning) and that are still refused, with
#: why: a pattern over the audit's case keys ("FAMILY OP LABEL", fnmatch) -> the reason.
_SIGN = ("per-channel or blockwise activations: LiteRT's kernel takes one scale (the first "
         "channel's, or none) for the whole tensor, which gives the op's value only because "
         "input and output carry the same parameters and the op commutes with a positive "
         "scale per value; activations are implemented per tensor here (no quantizer writes "
         "per-channel activations)")
_ORDER = ("per-channel or blockwise activations of an op that compares, reduces or copies "
          "stored values: LiteRT reads no per-channel scale, which keeps the meaning only "
          "when every tensor of the op carries the same parameters (the audit's models); "
          "activations are implemented per tensor here")
REFUSAL_GAPS: dict[str, str] = {
    "activations ABS INT* per-channel:*": _SIGN,
    "activations NEG INT* per-channel:*": _SIGN,
    "activations NEG INT* blockwise": _SIGN,
    **{f"activations {op} * per-channel:*": _ORDER for op in (
        "MAXIMUM", "MINIMUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "ARG_MAX", "ARG_MIN",
        "CONCATENATION", "FLOOR_MOD", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")},
    "activations ARG_MAX * blockwise": _ORDER,
    "activations GREATER_EQUAL INT16 blockwise": _ORDER,
    "activations PRELU INT16 per-tensor":
        "PRELU with an INT16 alpha: LiteRT's int16 kernel reads the alpha through an int8 "
        "pointer (see the PRELU note); near the real result only for small alphas",
    "activations ADD INT16 none":
        "an INT16 ADD without quantization parameters: LiteRT adds the plain integers; the "
        "int16 kernel here computes from the scales and fails at prepare",
    "scales PRELU INT16 zero input scale":
        "PRELU with an INT16 alpha is refused (LiteRT's int16 kernel reads the alpha as INT8: "
        "see the PRELU note); with a zero input scale every input is 0 and the alpha never "
        "counts, so LiteRT is right there by accident",
}


def refusal_gap(family: str, op: str, label: str) -> str | None:
    """The `REFUSAL_GAPS` pattern naming an audit case, or None."""
    from fnmatch import fnmatchcase
    key = f"{family} {op} {label}"
    return next((p for p in REFUSAL_GAPS if fnmatchcase(key, p)), None)


@dataclass(frozen=True)
class OpCoverage:
    """One builtin code: its versions and types here and in LiteRT's builtin resolver."""

    code: int
    name: str
    here_versions: tuple[tuple[int, int], ...]
    here_types: str
    litert_versions: tuple[int, int] | None
    litert_types: tuple[str, ...]
    litert_types_how: str  # "checks", "measured" or "source" (see litert_builtins.py)
    note: str

    @property
    def status(self) -> str:
        """"both", "versions" (fewer versions here), "litert only", "here only", "neither"."""
        if self.litert_versions is None:
            return "here only" if self.here_versions else "neither"
        if not self.here_versions:
            return "litert only"
        return "both" if _covers(self.here_versions, self.litert_versions) else "versions"

    def as_dict(self) -> dict:
        lv = self.litert_versions
        return {"code": self.code, "name": self.name, "status": self.status,
                "versions": [list(r) for r in self.here_versions], "types": self.here_types,
                "litert_versions": list(lv) if lv else None,
                "litert_types": list(self.litert_types),
                "litert_types_from": self.litert_types_how, "note": self.note}


def _covers(ranges, wanted: tuple[int, int]) -> bool:
    return all(any(a <= v <= b for a, b in ranges) for v in range(wanted[0], wanted[1] + 1))


def kernel_types(kernel) -> str:
    """What a kernel computes, in words: its declared ``dtypes`` or its ``types`` kinds,
    and the weight slots of its `accepts` declaration when it has one of its own."""
    declared = getattr(kernel, "dtypes", None) or getattr(
        getattr(kernel, "check_fn", None), "input_types", None)
    if declared:
        return ", ".join(declared)
    text = _kinds_text(kernel)
    slots = _slots_text(kernel)
    return f"{text}; {slots}" if slots else text


def _slots_text(kernel) -> str:
    """``input 1: INT8 INT4: per-tensor per-channel:0 | ...`` for the inputs a kernel's
    declaration names (per kind when it declares per kind)."""
    from .accepts import ANYTHING, DEFAULT, declaration
    decl = declaration(kernel)
    if decl is DEFAULT or decl is ANYTHING:
        return ""
    parts = [f"input {pos}: {decl.slot(pos).text}" for pos in sorted(decl.inputs)]
    if decl.kinds:
        for kind, sub in decl.kinds.items():
            named = [f"{pos}: {sub.slot(pos).text}" for pos in sorted(sub.inputs)
                     if sub.slot(pos) is not decl.inputs.get(pos)]
            if named:
                parts.append(f"{kind} input " + ", ".join(named))
    return "; ".join(parts)


def _kinds_text(kernel) -> str:
    types = getattr(kernel, "types", "float")
    if types == "any":
        return "any (type-agnostic)"
    if types == "float":
        return "float (and unquantized integers)"
    return ", ".join(types.split("+"))


def builtin_codes() -> dict[str, int]:
    return {name: int(value) for name, value in vars(BuiltinOperator).items()
            if not name.startswith("_") and isinstance(value, int)}


def coverage(resolver: OpResolver | None = None) -> list[OpCoverage]:
    """Every builtin code of the schema, in code order."""
    resolver = resolver or BuiltinOpResolver()
    rows = []
    for name, code in sorted(builtin_codes().items(), key=lambda kv: kv[1]):
        regs = resolver._builtins.get(code, [])
        lit = LITERT_BUILTINS.get(name)
        note = "; ".join(n for n in (MISSING.get(name), VERSION_GAPS.get(name),
                                     f"types: {TYPE_GAPS[name]}" if name in TYPE_GAPS else None)
                         if n)
        rows.append(OpCoverage(
            code, name, tuple((r.version_min, r.version_max) for r in regs),
            "; ".join(dict.fromkeys(kernel_types(r.kernel) for r in regs)),
            (lit[0], lit[1]) if lit else None, lit[2] if lit else (), lit[3] if lit else "",
            note))
    return rows


def summary(rows: list[OpCoverage]) -> dict:
    """The coverage figures: LiteRT builtins with a kernel here, with all their versions."""
    litert = [r for r in rows if r.litert_versions is not None]
    return {"builtin_codes": len(rows), "litert_builtins": len(litert),
            "covered": sum(r.status in ("both", "versions") for r in litert),
            "all_versions": sum(r.status == "both" for r in litert),
            "here_only": sum(r.status == "here only" for r in rows),
            "here": sum(bool(r.here_versions) for r in rows)}


# -- weights by type and quantization form ------------------------------------------------
@dataclass(frozen=True)
class FormCoverage:
    """One (op, activations, weight type, quantization form) of the sweep
    (tools/sweep_quant_forms.py): what LiteRT's builtin kernels do with it ("runs",
    "wrong": runs without meaning, "refuses"; ``litert_note`` says what it computes or
    why it refuses) and this interpreter ("runs", "refused"; ``note`` the refusal)."""

    op: str
    activations: str
    weight_type: str
    form: str
    litert: str
    here: str
    litert_note: str
    note: str

    def as_dict(self) -> dict:
        return {"op": self.op, "activations": self.activations,
                "weight_type": self.weight_type, "form": self.form, "litert": self.litert,
                "here": self.here, "litert_note": self.litert_note, "note": self.note}


#: why a combination LiteRT computes without meaning runs here (every other one is refused)
RUNS_WHERE_LITERT_IS_WRONG: dict[tuple[str, str], str] = {
    ("FULLY_CONNECTED", "INT4"): "as LiteRT's reference kernel (EvalHybridDense), which "
        "computes it right; the builtin resolver's optimized 4-bit path (EvalHybridDense4Bit, "
        "N >= 4, K >= 32 even) cannot hold a weight of -8 and departs from it",
    ("EMBEDDING_LOOKUP", "UINT8"): "as LiteRT does: its lookup reads an UINT8 table "
        "through an int8 pointer, so values above 127 come out negative (v - 256)",
}


def forms_coverage() -> list[FormCoverage]:
    """Every combination of the generated sweep (litert_forms.py), in sweep order."""
    from .litert_forms import LITERT_FORMS
    return [FormCoverage(op, act, wtype, form, lit, here, lnote, note)
            for (op, act, wtype, form), (lit, here, lnote, note) in LITERT_FORMS.items()]


def forms_summary(rows: list[FormCoverage]) -> dict:
    """The figures of the weights sweep: how many combinations LiteRT computes with
    meaning, computes without, refuses; how many of each run here."""
    def count(lit, here=None):
        return sum(r.litert == lit and (here is None or r.here == here) for r in rows)

    return {"combinations": len(rows), "ops": len({r.op for r in rows}),
            "litert_runs": count("runs"), "litert_runs_here_runs": count("runs", "runs"),
            "litert_wrong": count("wrong"), "litert_wrong_here_refused": count("wrong", "refused"),
            "litert_wrong_here_runs": count("wrong", "runs"),
            "litert_refuses": count("refuses"),
            "litert_refuses_here_refused": count("refuses", "refused")}
