"""Short, readable descriptions of an operator's key options (`3x3 s2 SAME relu6`)."""
from __future__ import annotations

from ..model import Operator


def _kernel_size(op: Operator) -> str | None:
    opts = op.options
    if "filter_width" in opts and "filter_height" in opts:
        return f"{opts['filter_height']}x{opts['filter_width']}"
    if op.name in ("CONV_2D", "DEPTHWISE_CONV_2D") and len(op.inputs) > 1 and op.inputs[1] >= 0:
        shape = op.subgraph.tensors[op.inputs[1]].shape
        if len(shape) == 4:
            return f"{shape[1]}x{shape[2]}"
    if op.name == "TRANSPOSE_CONV" and len(op.inputs) > 1 and op.inputs[1] >= 0:
        shape = op.subgraph.tensors[op.inputs[1]].shape
        if len(shape) == 4:
            return f"{shape[1]}x{shape[2]}"
    return None


#: at most this many characters of a composite's attributes on its box
_ATTRIBUTES_SHOWN = 60


def _attribute_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_attribute_text(v) for v in value[:4])
        return f"[{inner}{', ...' if len(value) > 4 else ''}]"
    if isinstance(value, dict):
        return "{...}"
    return str(value)


def composite_title(op: Operator) -> str | None:
    """The box title of a STABLEHLO_COMPOSITE: its name (``odml.rms_norm``), else None."""
    return op.composite_name


def composite_summary(op: Operator) -> str:
    """A composite's decoded attributes, ``epsilon=1e-06`` (sorted by key, cut short)."""
    attrs = op.composite_attributes
    if attrs is None:
        return ""
    if not isinstance(attrs, dict):
        return f"attributes <{len(attrs)} bytes>" if isinstance(attrs, (bytes, bytearray)) \
            else _attribute_text(attrs)
    text = ", ".join(f"{k}={_attribute_text(v)}" for k, v in sorted(attrs.items()))
    return text if len(text) <= _ATTRIBUTES_SHOWN else text[:_ATTRIBUTES_SHOWN - 1] + "\u2026"


def options_summary(op: Operator) -> str:
    """The few options a reader wants on the box; the properties panel shows the rest."""
    if op.composite_name is not None:
        return composite_summary(op)
    opts = op.options
    parts: list[str] = []
    kernel = _kernel_size(op)
    if kernel:
        parts.append(kernel)
    sw, sh = opts.get("stride_w"), opts.get("stride_h")
    if sw is not None and sh is not None and (sw != 1 or sh != 1):
        parts.append(f"s{sw}" if sw == sh else f"s{sh}x{sw}")
    dw, dh = opts.get("dilation_w_factor"), opts.get("dilation_h_factor")
    if dw is not None and dh is not None and (dw != 1 or dh != 1):
        parts.append(f"d{dw}" if dw == dh else f"d{dh}x{dw}")
    if isinstance(opts.get("padding"), str):
        parts.append(opts["padding"])
    if "axis" in opts and isinstance(opts["axis"], int):
        parts.append(f"axis {opts['axis']}")
    if op.name in ("SOFTMAX",) and opts.get("beta", 1.0) != 1.0:
        parts.append(f"beta {opts['beta']:g}")
    if opts.get("keep_num_dims"):
        parts.append("keep dims")
    if op.fused_activation:
        parts.append(str(op.fused_activation).lower())
    return " ".join(parts)
