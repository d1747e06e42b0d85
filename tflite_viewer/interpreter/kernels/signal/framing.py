"""The streaming ops of TFLM's signal library: framing, stacking, delay, overlap-add.

On a device these run once per block of audio and keep samples from one invocation to the
next in circular buffers.  Here each keeps that backlog as a numpy array in its node's
state (see common.py), one row per outer index, so that successive `Interpreter.invoke`
calls see the same stream TFLM sees; `Interpreter.reset_variables` starts the stream over.

Framer and Stacker report in ``output_valid`` whether a whole frame was ready.  When it was
not, TFLM leaves their output untouched; so do these kernels (the output keeps its previous
values, zeros before the first frame).
"""
from __future__ import annotations

import numpy as np

from ...registration import register
from ...tensor import BOOL, FLOAT32, INT16
from .common import (OptionError, SignalKernel, bool_option, int_option, require, require_option,
                     type_option)


def _rows(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape[:-1], dtype=np.int64))


@register("SignalFramer", versions=(1, 1))
class SignalFramer(SignalKernel):
    """Overlapping frames of ``frame_size`` samples every ``frame_step`` samples (TFLM's
    Register_FRAMER); with ``prefill`` the stream starts with frame_size - frame_step
    zeros."""

    inputs = (INT16,)
    outputs = (INT16, BOOL)

    def parse(self, opts, node):
        p = {"frame_size": int_option(opts, "frame_size", node, minimum=1),
             "frame_step": int_option(opts, "frame_step", node, minimum=1),
             "prefill": bool_option(opts, "prefill", node)}
        require_option(not (p["prefill"] and p["frame_step"] > p["frame_size"]), node,
                       f"prefill with frame_step {p['frame_step']} > frame_size "
                       f"{p['frame_size']} (TFLM would prefill a negative count)")
        return p

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        p = node.user_data["params"]
        step = p["frame_step"]
        require(len(x) >= 1 and x[-1] >= step and x[-1] % step == 0,
                f"{node.name}: the last dimension of {list(x)} must be a multiple of "
                f"frame_step {step}")
        ctx.resize(ctx.output(node, 0), x[:-1] + (x[-1] // step, p["frame_size"]))
        ctx.resize(ctx.output(node, 1), ())

    def invoke(self, ctx, node):
        p = node.user_data["params"]
        size, step = p["frame_size"], p["frame_step"]
        x = ctx.value(node, 0)
        rows = x.reshape(_rows(x.shape), x.shape[-1])
        n_frames = x.shape[-1] // step
        out_shape = x.shape[:-1] + (n_frames, size)
        state = node.user_data["state"]
        if state is None or state["out"].shape != out_shape:
            backlog = size - step if p["prefill"] else 0
            state = {"pending": np.zeros((rows.shape[0], backlog), np.int16),
                     "out": np.zeros(out_shape, np.int16)}
        pending = state["pending"]
        out = state["out"].copy().reshape(rows.shape[0], n_frames, size)
        valid = True
        for f in range(n_frames):
            pending = np.concatenate([pending, rows[:, f * step:(f + 1) * step]], axis=1)
            if pending.shape[1] >= size:
                out[:, f] = pending[:, :size]
                pending = pending[:, step:]
            else:
                valid = False
        state["pending"], state["out"] = pending, out.reshape(out_shape)
        node.user_data["state"] = state
        ctx.set_output(ctx.output(node, 0), state["out"])
        ctx.set_output(ctx.output(node, 1), np.array(valid))


@register("SignalStacker", versions=(1, 1))
class SignalStacker(SignalKernel):
    """Stack left_context + 1 + right_context successive frames of ``num_channels``,
    advancing ``stacker_step`` frames per output; the first frame is repeated to fill the
    left context (TFLM's Register_STACKER)."""

    inputs = (INT16,)
    outputs = (INT16, BOOL)

    def parse(self, opts, node):
        p = {"num_channels": int_option(opts, "num_channels", node, minimum=1),
             "left": int_option(opts, "stacker_left_context", node, minimum=0),
             "right": int_option(opts, "stacker_right_context", node, minimum=0),
             "step": int_option(opts, "stacker_step", node, minimum=1)}
        frames = p["left"] + p["right"] + 1
        if p["step"] > frames:
            raise OptionError(f"{node.name}: stacker_step {p['step']} exceeds the "
                              f"{frames} stacked frames (TFLM's buffer would underflow)")
        p["size"] = p["num_channels"] * frames
        return p

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        p = node.user_data["params"]
        require(x == (p["num_channels"],), f"{node.name}: the input must be num_channels = "
                f"{p['num_channels']} values, got {list(x)}")
        ctx.resize(ctx.output(node, 0), (p["size"],))
        ctx.resize(ctx.output(node, 1), ())

    def invoke(self, ctx, node):
        p = node.user_data["params"]
        x = ctx.value(node, 0)
        state = node.user_data["state"]
        if state is None:
            state = {"pending": np.zeros(0, np.int16), "out": np.zeros(p["size"], np.int16)}
        pending = np.concatenate([state["pending"], x])
        if not state.get("started"):  # the first frame fills the left context
            pending = np.concatenate([pending] + [x] * p["left"])
            state["started"] = True
        valid = pending.size >= p["size"]
        if valid:
            state["out"] = pending[:p["size"]].copy()
            pending = pending[p["step"] * p["num_channels"]:]
        state["pending"] = pending
        node.user_data["state"] = state
        ctx.set_output(ctx.output(node, 0), state["out"])
        ctx.set_output(ctx.output(node, 1), np.array(valid))


@register("SignalDelay", versions=(1, 1))
class SignalDelay(SignalKernel):
    """Delay each row of the stream by ``delay_length`` samples (TFLM's Register_DELAY)."""

    inputs = (INT16,)
    outputs = (INT16,)

    def parse(self, opts, node):
        return {"delay_length": int_option(opts, "delay_length", node, minimum=0)}

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        require(len(x) >= 1, f"{node.name}: the input needs at least one dimension")
        ctx.resize(ctx.output(node, 0), x)

    def invoke(self, ctx, node):
        delay = node.user_data["params"]["delay_length"]
        x = ctx.value(node, 0)
        rows = x.reshape(_rows(x.shape), x.shape[-1])
        state = node.user_data["state"]
        if state is None or state.shape[0] != rows.shape[0]:
            state = np.zeros((rows.shape[0], delay), np.int16)
        stream = np.concatenate([state, rows], axis=1)
        node.user_data["state"] = stream[:, stream.shape[1] - delay:]
        ctx.set_output(ctx.output(node, 0), stream[:, :x.shape[-1]].reshape(x.shape))


def overlap_add_frame(buffer: np.ndarray, frame: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """(the ``step`` finished samples, the buffer shifted by them) after adding one frame
    (int16: saturating, float32: float adds)."""
    if buffer.dtype == np.int16:
        buffer = np.clip(buffer.astype(np.int32) + frame, -32768, 32767).astype(np.int16)
    else:
        buffer = buffer + frame
    done = buffer[:, :step].copy()
    rest = np.zeros_like(buffer)
    rest[:, :buffer.shape[1] - step] = buffer[:, step:]
    return done, rest


@register("SignalOverlapAdd", versions=(1, 1))
class SignalOverlapAdd(SignalKernel):
    """Overlap-add frames of ``frame_size`` samples at ``frame_step`` spacing (TFLM's
    Register_OVERLAP_ADD), in int16 (saturating) or float32."""

    inputs = (None,)
    outputs = (None,)

    def parse(self, opts, node):
        return {"T": type_option(opts, node, (INT16, FLOAT32)),
                "frame_step": int_option(opts, "frame_step", node, minimum=1)}

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        step = node.user_data["params"]["frame_step"]
        require(len(x) >= 2 and x[-1] >= step, f"{node.name}: needs frames [..., n_frames, "
                f"frame_size >= frame_step {step}], got {list(x)}")
        ctx.resize(ctx.output(node, 0), x[:-2] + (x[-2] * step,))

    def invoke(self, ctx, node):
        step = node.user_data["params"]["frame_step"]
        x = ctx.value(node, 0)
        n_frames, size = x.shape[-2], x.shape[-1]
        frames = x.reshape(-1, n_frames, size)
        buffer = node.user_data["state"]
        if buffer is None or buffer.shape != (frames.shape[0], size):
            buffer = np.zeros((frames.shape[0], size), x.dtype)
        out = np.empty((frames.shape[0], n_frames, step), x.dtype)
        for f in range(n_frames):
            out[:, f], buffer = overlap_add_frame(buffer, frames[:, f], step)
        node.user_data["state"] = buffer
        ctx.set_output(ctx.output(node, 0), out.reshape(x.shape[:-2] + (n_frames * step,)))
