"""An operator as XNNPACK's checks see it, and the checks every operator kind shares
(operand counts, fused activations, padding), from google-ai-edge/LiteRT
``tflite/delegates/xnnpack/xnnpack_delegate.cc`` (``CheckNumInputsAndOutputs``,
``ConvertActivationToOutputRange``, ``CalculatePadding``)."""
from __future__ import annotations

from .xnnpack_types import Ctx, Refuse

ACT_OK = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6")
C_PADDING = {1: "SAME", 2: "VALID"}  # TfLitePadding of a raw params struct
C_ACT = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT",
          6: "SIGMOID"}


class Node:
    """An operator as the checks see it: tensors, options (C zero defaults when the
    file has no options table, as LiteRT's parser leaves its params struct)."""

    def __init__(self, c: Ctx, k: int) -> None:
        self.c, self.k = c, k
        self.ins = c.f.inputs[k]
        self.outs = c.f.outputs[k]
        self.o = c.f.options(k) or {}
        self.name = c.f.op_name(k)

    def i(self, n: int) -> int:
        if not n < len(self.ins):
            raise Refuse(f"input {n} missing")
        t = self.ins[n]
        if not t >= 0:
            raise Refuse(f"optional input {n} omitted")
        return t

    def out(self, n: int = 0) -> int:
        if not n < len(self.outs):
            raise Refuse(f"output {n} missing")
        return self.outs[n]

    def io(self, n_in, n_out) -> None:
        """CheckNumInputsAndOutputs: an exact count or a (min, max) range."""
        for count, want, what in ((len(self.ins), n_in, "inputs"), (len(self.outs), n_out,
                                                                     "outputs")):
            lo, hi = want if isinstance(want, tuple) else (want, want)
            if not lo <= count <= hi:
                raise Refuse(f"{count} {what}; XNNPACK's {self.name} takes "
                             + (f"{lo}" if lo == hi else f"{lo} to {hi}"))


def check_activation(act: str | None) -> None:
    """ConvertActivationToOutputRange: only clamps fuse."""
    act = act or "NONE"
    if not (act in ACT_OK or act not in C_ACT.values()):
        raise Refuse(f"fused activation {act}: XNNPACK fuses only RELU, RELU6 and RELU_N1_TO_1")


def check_padding(p: str | None) -> None:
    if not p in ("SAME", "VALID"):
        raise Refuse(f"padding {p or 'unset'} is not SAME or VALID")
