"""Which parts of two models correspond: subgraphs, operators and tensors, each match
with its evidence (name, signature, structure, position).

A low layer (it reads models and nothing else), so that every comparison of two models
uses the same matcher: `tflite_viewer.diff` (the `diff` command and the window's
comparison) and `tflite_viewer.quant.pairing` (float vs quantized tensors).
"""
from .graph import ACTIVATION_OPS, VALUE_PRESERVING, SideGraph
from .model import Key, ModelMatch, match_models
from .subgraph import Evidence, SubgraphMatcher

__all__ = ["ACTIVATION_OPS", "Evidence", "Key", "ModelMatch", "SideGraph", "SubgraphMatcher",
           "VALUE_PRESERVING", "match_models"]
