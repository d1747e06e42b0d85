"""What differs between two models: structure, options, weights, quantization and, run
on the same inputs, their numbers.

>>> from tflite_viewer.diff import diff_models
>>> d = diff_models("model_float.tflite", "model_int8.tflite")
>>> d.same, d.counts()["operator"]
>>> for x in d.differences: print(x.line())
>>> from tflite_viewer.diff.numeric import compare_numbers
>>> d.numeric = compare_numbers(d.match, samples=1)      # runs both models
>>> d.numeric.first_parting                               # the first op where they part

The match comes from `tflite_viewer.match` (the one matcher, which the quantization
pairing uses too); `structure` and `model_level` compare each matched pair and list what
is only on one side; `numeric` runs both models through the interpreter.  Nothing here
imports Qt: the `diff` command and the window's comparison both use it.
"""
from .differences import Difference, Ref
from .report import ModelDiff, diff_models

__all__ = ["Difference", "ModelDiff", "Ref", "diff_models"]
