"""Touch every part of a model the way the UI and CLI do, so lazy decoding is exercised too."""
from __future__ import annotations

from tflite_viewer.cli.info import render_text, summarize
from tflite_viewer.model import Model, ModelFormatError


def walk(model: Model) -> None:
    """Read everything; the only error allowed is ModelFormatError (for data-level defects)."""
    for sg in model.subgraphs:
        for op in sg.operators:
            _ = (op.name, op.version, op.options, op.custom_options, op.called_subgraphs,
                 op.inputs, op.outputs, op.intermediates, op.mutating_variable_inputs)
        for t in sg.tensors:
            _ = (t.name, t.shape, t.shape_signature, t.quantization, t.sparsity, t.kind,
                 t.variant_tensors)
            try:
                t.dequantized()
            except (ModelFormatError, ValueError):
                pass
    for m in model.metadata:
        try:
            m.decoded()
        except ModelFormatError:
            pass
    model.associated_files()
    summarize(model)
    render_text(model)
