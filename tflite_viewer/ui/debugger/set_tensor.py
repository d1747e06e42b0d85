"""Set a tensor's values while paused: from a .npy file or one constant, then continue."""
from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QFileDialog, QInputDialog

from ...interpreter.inputs import InputError, InputSpec, check_input


def tensor_values(tensor, source: str) -> np.ndarray:
    """The new values of a (model) tensor: ``source`` is a .npy path or a number.  Checked
    against its type and shape like an input (a ValueError names the tensor and why)."""
    shape = tuple(tensor.shape or ())
    spec = InputSpec(f"t{tensor.index} {tensor.name}", tensor.subgraph.index, tensor.index, -1,
                     tensor.type_name, tensor.dtype, shape, None, ())
    text = source.strip()
    try:
        value = float(text)
    except ValueError:
        try:
            arr = np.load(text, allow_pickle=False)
        except Exception as exc:  # noqa: BLE001 - one message for any unreadable file
            raise InputError(f"tensor {spec.name!r}: cannot read {text!r}: {exc}") from None
        return check_input(spec, arr, text)
    if tensor.dtype is not None and tensor.dtype.kind in "iu" and value != int(value):
        raise InputError(f"tensor {spec.name!r} is {tensor.type_name}: {text} is not an integer")
    return check_input(spec, np.full(shape, value, np.float64 if tensor.dtype.kind == "f"
                                     else np.int64))


def set_tensor_dialog(controller) -> None:
    """Ask for a constant or a .npy file for the inspected tensor, and set it."""
    w = controller.window
    t = w.tensor_panel.tensor
    if t is None or t.is_constant:
        w.statusBar().showMessage("Select an activation tensor to set its values", 6000)
        return
    text, ok = QInputDialog.getText(w, "Set tensor values",
                                    f"t{t.index} {t.name}: a constant, or leave empty to "
                                    "choose a .npy file")
    if not ok:
        return
    if not text.strip():
        text, _ = QFileDialog.getOpenFileName(w, "Values", "", "NumPy (*.npy)")
        if not text:
            return
    try:
        values = tensor_values(t, text)
    except (InputError, ValueError) as exc:
        w.errors.report("Cannot set the tensor", str(exc), parent=w)
        return
    controller.set_tensor(t.subgraph.index, t.index, values)
