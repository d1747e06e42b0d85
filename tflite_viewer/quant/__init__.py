"""Quantization facts and analysis (Qt-free): integer ranges per type, spec checks, weight
and activation range use, float-vs-quantized metrics, per-layer float fallback gain.

`ranges` and `spec` load eagerly (the editor and the window read the ranges); the analysis,
which runs the interpreter, loads on first use.
"""
from .ranges import INTEGER_RANGES, QUANTIZABLE_TYPES, dequantize, integer_range, quantize
from .spec import SpecFinding, check_spec

__all__ = ["INTEGER_RANGES", "QUANTIZABLE_TYPES", "QuantReport", "SpecFinding", "analyze",
           "check_spec", "dequantize", "integer_range", "quantize"]


def __getattr__(name: str):
    if name in ("analyze", "QuantReport", "TensorReport", "Cancelled"):
        from . import analysis
        return getattr(analysis, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
