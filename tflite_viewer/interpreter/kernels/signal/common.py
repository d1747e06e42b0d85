"""What the signal-library kernels share: options, type checks, per-node state.

TFLM reads a signal op's options from its FlexBuffer map (the TensorFlow op's attributes)
and checks tensor counts and types in Prepare; a model that fails there cannot run on a
device.  Here the same checks run when the model is loaded (`SignalKernel.check`), so such a
model is refused with an `UnsupportedOpError` that says what TFLM expects, before anything
runs.  Rank and size checks that need shapes run in prepare.

Streaming ops (framing, delay, overlap-add, spectral subtraction, stacker) keep state from
one invocation to the next, as on a device.  The state lives in ``node.user_data["state"]``;
`SignalKernel.reset` forgets it (TFLM's ``reset``), which the interpreter calls when it
resets its variables (allocation, `Interpreter.reset_variables`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...registration import Kernel
from ...tensor import BOOL, FLOAT32, INT16, INT32, UINT32, UINT64

TYPE_NAMES = {FLOAT32: "FLOAT32", INT16: "INT16", INT32: "INT32", UINT32: "UINT32",
              UINT64: "UINT64", BOOL: "BOOL"}


class OptionError(ValueError):
    """A custom op's options lack a field or hold a value TFLM cannot use."""


def options_map(node) -> dict[str, Any]:
    """The op's custom options as a dict (TFLM's ops take a FlexBuffer map)."""
    data = node.custom_data
    if not isinstance(data, dict):
        what = "none" if data is None else f"{len(data)} bytes that are not a FlexBuffer map" \
            if isinstance(data, (bytes, bytearray)) else type(data).__name__
        raise OptionError(f"{node.name}: custom options must be a FlexBuffer map, got {what}")
    return data


def int_option(opts: dict, name: str, node, minimum: int | None = None) -> int:
    if name not in opts:
        raise OptionError(f"{node.name}: option {name!r} missing")
    value = opts[name]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise OptionError(f"{node.name}: option {name!r} must be an integer, got {value!r}")
    value = int(value)
    if not -2**31 <= value < 2**31:
        raise OptionError(f"{node.name}: option {name!r} = {value} does not fit an int32")
    if minimum is not None and value < minimum:
        raise OptionError(f"{node.name}: option {name!r} = {value}, must be >= {minimum}")
    return value


def bool_option(opts: dict, name: str, node) -> bool:
    if name not in opts:
        raise OptionError(f"{node.name}: option {name!r} missing")
    return bool(opts[name])


def type_option(opts: dict, node, allowed: Sequence[int]) -> int:
    """The "T" option (a TensorType code) of the ops TFLM builds for several types."""
    t = int_option(opts, "T", node)
    if t not in allowed:
        names = ", ".join(TYPE_NAMES[a] for a in allowed)
        raise OptionError(f"{node.name}: option 'T' = {t} is not one of the types TFLM "
                          f"builds it for ({names})")
    return t


def require_option(condition: bool, node, message: str) -> None:
    """An option rule TFLM's Init relies on (a violation would read out of bounds there):
    an OptionError naming the op."""
    if not condition:
        raise OptionError(f"{node.name}: {message}")


def require(condition: bool, message: str) -> None:
    """A Prepare-time check (TF_LITE_ENSURE): a ValueError the interpreter reports with the
    op's location."""
    if not condition:
        raise ValueError(message)


class SignalKernel(Kernel):
    """Base of the signal-library kernels.

    Subclasses give ``inputs`` and ``outputs``: per position, the TensorType code TFLM's
    Prepare insists on (``None``: the type of option "T"), and implement ``parse(opts,
    node)`` (the options, validated), ``prepare`` and ``invoke``.
    """

    types = "any"  # the checks below are the op's own
    inputs: tuple = ()
    outputs: tuple = ()
    #: False for the ops TFLM gives no options (FftAutoScale, FilterBankSquareRoot)
    needs_options = True

    def parse(self, opts: dict, node) -> dict:
        """The op's parameters from its options map; `OptionError` when TFLM could not
        use them."""
        return {}

    def _parse(self, node) -> dict:
        opts = options_map(node) if self.needs_options else {}
        return self.parse(opts, node)

    def check(self, ctx, node) -> str | None:
        try:
            params = self._parse(node)
        except OptionError as exc:
            return str(exc)
        if len(node.inputs) != len(self.inputs) or len(node.outputs) != len(self.outputs):
            return (f"{node.name} takes {len(self.inputs)} inputs and {len(self.outputs)} "
                    f"outputs, this node has {len(node.inputs)} and {len(node.outputs)}")
        for what, indices, wanted in (("input", node.inputs, self.inputs),
                                      ("output", node.outputs, self.outputs)):
            for pos, (t, want) in enumerate(zip(indices, wanted)):
                if t < 0:
                    return f"{node.name}: {what} {pos} is missing"
                want = params.get("T") if want is None else want
                got = ctx.tensors[t].type
                if got != want:
                    return (f"{node.name}: {what} {pos} is {ctx.tensors[t].type_name}, "
                            f"TFLM's kernel takes {TYPE_NAMES.get(want, want)}")
        return None

    def init(self, ctx, node) -> dict:
        return {"params": self._parse(node), "state": None}

    def reset(self, ctx, node) -> None:
        if isinstance(node.user_data, dict):
            node.user_data["state"] = None

    def prepare(self, ctx, node) -> None:
        for i in node.outputs:
            ctx.set_dynamic(ctx.tensors[i])
