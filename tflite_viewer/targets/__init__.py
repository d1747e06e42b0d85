"""Will it run there: per operator, what each runtime and delegate does with it.

>>> from tflite_viewer.model import load_model
>>> from tflite_viewer.targets import analyze
>>> report = analyze(load_model("model.tflite"), ["xnnpack", "tflm"])
>>> report.results["xnnpack"].partitions[0].outputs
>>> print(report.table())

Targets: ``litert`` (LiteRT's CPU kernels, optionally at an older runtime version),
``xnnpack`` (LiteRT 2.3.0's default delegate), ``gpu`` (LiteRT's GPU delegate) and
``tflm`` (TensorFlow Lite Micro).  Each is a transcription of that target's own rules
(the module docstrings name the source files); XNNPACK and TFLM are checked against the
targets themselves in the tests.  Qt-free: the CLI and the window read the same report.
"""
from .report import TARGETS, Report, analyze
from .verdict import FALLS_BACK, REFUSED, RUNS, VERDICTS, Fix, OpVerdict, Partition, TargetResult

__all__ = ["FALLS_BACK", "REFUSED", "RUNS", "TARGETS", "VERDICTS", "Fix", "OpVerdict",
           "Partition", "Report", "TargetResult", "analyze"]
