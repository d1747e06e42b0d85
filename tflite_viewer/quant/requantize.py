"""Quantize a float model with LiteRT's quantizer: a recipe (`recipes.build_recipe`), the
calibration samples a static recipe needs, progress and cancel; the model bytes back.

>>> from tflite_viewer.quant import recipes, requantize
>>> recipe = recipes.build_recipe(model, "dynamic_wi4b32_afp32", keep_float=["lm_head"])
>>> data = requantize.quantize("model_f32.tflite", recipe)
>>> requantize.write_model("model_q4.tflite", data)

`quantize` runs the quantizer's own steps, as its ``Quantizer.calibrate`` and
``Quantizer.quantize`` chain them (a `Calibrator`, a `ParamsGenerator`, a
`ModelModifier`), and writes the bytes the quantizer writes for the same recipe (tested
against ``Quantizer`` itself).  It runs them itself to report progress and to stop when
``cancel()`` turns True: the calibration goes one sample at a time through one
calibrator (as the quantizer's own ``CalibrationSignatureRunner`` feeds it), and the
quantizer asks its recipe manager for each op's settings, where `quantize` checks
``cancel`` and counts the op.  A model that holds variables calibrates one signature at a
time instead: the calibrator resets them after each call, and the quantizer resets them
after each signature.

The samples (`calibration_samples`) are those of the analysis (`plan.make_samples`): a
.npz, an image folder or given arrays for one signature, seeded inputs for the others.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..interpreter.inputs import input_specs
from ..model import Model
from ..model.durable import replace_file, write_all
from ..model.errors import TFLiteViewerError
from .analysis import Cancelled
from .plan import make_samples
from .recipes import Recipe, RecipeError, quantizer
from .samples import model_inputs

Progress = Callable[[int, int, str], None]
#: {signature key: [{input name: array}, ...]}: the quantizer's calibration data
CalibrationData = Mapping[str, Sequence[Mapping[str, Any]]]
#: what the quantizer's Quantizer.calibrate uses (its defaults)
CALIBRATION_THREADS = 16
_VARIABLE_OPS = {"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"}


class QuantizeError(TFLiteViewerError):
    """The quantizer refused the model or the recipe; the message is its reason."""


def _entry_signature(model: Model) -> str:
    """The signature supplied samples feed by default: subgraph 0's, else the first."""
    return next((s.key for s in model.signature_defs if s.subgraph_index == 0),
                model.signature_defs[0].key)


def calibration_samples(model: Model, *, count: int = 10, seed: int = 0,
                        npz: str | os.PathLike | None = None,
                        images: str | os.PathLike | None = None,
                        given: Sequence | None = None,
                        signature: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The quantizer's calibration data for ``model``: the samples supplied (a .npz, an
    image folder, or arrays as a debugger session's Inputs) for ``signature`` (default:
    subgraph 0's), ``count`` seeded samples for every other signature, or for all of them
    when none is supplied, each in its input's own type."""
    if not model.signature_defs:
        raise RecipeError("the model has no signature, and the quantizer calibrates a "
                          "model through its signatures")
    first = signature if signature is not None else _entry_signature(model)
    model.signature(first)  # a KeyError naming the signatures
    out = {}
    for sig in model.signature_defs:
        mine = sig.key == first
        batch = make_samples(model, None, count=count, seed=seed,
                             npz=npz if mine else None, images=images if mine else None,
                             given=given if mine else None, signature=sig.key)
        names = [s.name for s in input_specs(model, sig.key)]
        out[sig.key] = [dict(zip(names, model_inputs(model, sample, sig.key)))
                        for sample in batch]
    return out


def _holds_variables(model: Model) -> bool:
    return any(o.name in _VARIABLE_OPS for sg in model.subgraphs for o in sg.operators) or \
        any(t.is_variable for sg in model.subgraphs for t in sg.tensors)


def _check_data(model: Model, data: CalibrationData) -> None:
    """Every signature calibrated (the quantizer refuses a model with one left out)."""
    keys = [s.key for s in model.signature_defs]
    missing = [k for k in keys if not data.get(k)]
    extra = [k for k in data if k not in keys]
    if extra:
        raise RecipeError(f"calibration data for signature {extra[0]!r}, which the model "
                          f"does not have (it has {', '.join(keys)})")
    if missing:
        raise RecipeError(f"no calibration data for signature {missing[0]!r}: the "
                          "quantizer calibrates every signature")


class _Steps:
    """Progress over the run: one step per calibration call, per op the quantizer asks
    settings for while it chooses the parameters, and one for writing the model;
    ``cancel`` is checked at each, and at each op it looks at while calibrating."""

    def __init__(self, progress: Progress | None, cancel: Callable[[], bool] | None) -> None:
        self.done, self.total = 0, 1
        self.progress, self.cancel = progress, cancel
        self.choosing = False  # ops count as steps (else they only check cancel)

    def check(self) -> None:
        if self.cancel is not None and self.cancel():
            raise Cancelled("quantization cancelled")

    def step(self, message: str) -> None:
        self.check()
        if self.progress is not None:
            self.progress(min(self.done, self.total - 1), self.total, message)
        self.done += 1

    def on_op(self) -> None:
        if self.choosing:
            self.step("choosing quantization parameters")
        else:
            self.check()

    def finish(self) -> None:
        if self.progress is not None:
            self.progress(self.total, self.total, "done")


def _manager(recipe: Recipe, on_op: Callable[[], None]):
    """The quantizer's `RecipeManager` holding ``recipe``, calling ``on_op`` each time the
    quantizer asks it for an op's settings (the one place it asks, op by op)."""
    from litert_quantizer import recipe_manager

    class Watched(recipe_manager.RecipeManager):
        def get_quantization_configs(self, target_op_name, scope_name):
            on_op()
            return super().get_quantization_configs(target_op_name, scope_name)

    manager = Watched()
    try:
        manager.load_quantization_recipe(recipe)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise RecipeError(f"the quantizer refuses the recipe: {_reason(exc)}") from None
    return manager


def _groups(float_model: str | os.PathLike | bytes, samples: CalibrationData | None
            ) -> list[tuple[str, list]]:
    """The calls of the calibration: one sample each, or one signature each for a model
    that holds variables."""
    from ..model import load_model
    if samples is None:
        raise RecipeError("the recipe quantizes activations and needs calibration "
                          "samples (calibration_samples)")
    model = load_model(float_model)
    _check_data(model, samples)
    if _holds_variables(model):
        return [(k, list(v)) for k, v in samples.items()]
    return [(k, [x]) for k, v in samples.items() for x in v]


def quantize(float_model: str | os.PathLike | bytes, recipe: Recipe,
             samples: CalibrationData | None = None, progress: Progress | None = None,
             cancel: Callable[[], bool] | None = None) -> bytes:
    """``float_model`` (a path or the bytes of a .tflite) quantized with ``recipe``, the
    bytes the quantizer writes.  ``samples`` calibrate a recipe that needs it
    (`calibration_samples`; `RecipeError` when missing).  ``progress(done, total,
    message)`` is called as it goes; ``cancel()`` returning True stops it with
    `Cancelled`.  `QuantizeError` carries the quantizer's reason when it refuses."""
    quantizer()
    from litert_quantizer import calibrator, model_modifier, params_generator
    from litert_quantizer.utils import tfl_flatbuffer_utils as tfu

    steps = _Steps(progress, cancel)
    manager = _manager(recipe, steps.on_op)
    groups = _groups(float_model, samples) if manager.need_calibration() else []
    try:
        buffer = memoryview(tfu.get_model_content(str(float_model))
                            if isinstance(float_model, (str, os.PathLike)) else float_model)
        fb = tfu.read_model(buffer)
        steps.total = len(groups) + sum(len(sg.operators) + 2 for sg in fb.subgraphs) + 1
        qsvs = None
        if groups:
            calib = calibrator.Calibrator(
                buffer, num_threads=CALIBRATION_THREADS,
                mode=calibrator.CalibrationMode.CALIBRATION_PRESERVE_ALL_TENSORS)
            for n, (key, batch) in enumerate(groups):
                steps.step(f"calibrating on {key} ({n + 1}/{len(groups)})")
                calib.calibrate({key: batch}, manager)
            qsvs = calib.get_model_qsvs()
        steps.choosing = True
        params = params_generator.ParamsGenerator(fb).generate_quantization_parameters(
            manager, qsvs, False)
        steps.choosing = False
        steps.step("writing the quantized model")
        out = model_modifier.ModelModifier(fb).modify_model(params, enable_progress_bar=False)
    except (Cancelled, RecipeError):
        raise
    except Exception as exc:  # the quantizer's refusals: ValueError, RuntimeError, ...
        raise QuantizeError(f"the quantizer refused it: {_reason(exc)}") from exc
    steps.finish()
    return bytes(out)


def _reason(exc: BaseException) -> str:
    text = " ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def write_model(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (`model.durable.replace_file`: a
    failure leaves no partial file and any old one as it was), keeping an old file's
    permissions."""
    target = Path(path)
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
    replace_file(target, lambda fd: write_all(fd, data), mode)
