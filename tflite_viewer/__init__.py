"""tflite-viewer: explore, debug, quantization-inspect and edit TensorFlow Lite models.

Layers (docs/ARCHITECTURE.md), imports pointing down only: ``cli`` -> ``ui`` ->
``graph``, ``edit``, ``interpreter``, ``quant`` -> ``model`` -> ``schema``.  The window
(``ui``) reads models and the graph, edits through ``edit``, debugs through the
interpreter's debug session and reads ``quant``'s ranges; ``quant`` runs the interpreter;
``interpreter`` never imports ``edit`` and ``graph`` never imports ``interpreter``.  Only
``tflite_viewer.ui`` imports PySide6.  The import-linter contracts in pyproject.toml check
all of this (tests/test_architecture.py).
"""
__version__ = "0.1.0"
