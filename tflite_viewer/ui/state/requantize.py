"""Quantizing the float model again from the Quantization dock's worst-first table (no Qt).

The table lists tensors of the open quantized model; LiteRT's quantizer quantizes the
float model.  `float_tensors` reads the rows chosen as their paired float tensors and
`float_selectors` turns those into the quantizer's selectors of the *float* ops that
produce them (``S:N``, `quant.recipes.select`),
`Request` holds what the dialog asked for (keep those ops in float, or quantize them with
another recipe, on top of a base recipe), and `run` builds the recipe
(`recipes.build_recipe`), calibrates when the recipe needs it on the dock's samples, runs
`quant.requantize.quantize` with progress and cancel, and writes the model (and the
recipe, the quantizer's JSON that ``litert quantize --custom-recipe`` takes) whole or
not at all.  The dock runs `run` on a worker and then asks the window to open the result
beside the float model.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ...model import Model, load_model
from ...quant import recipes, requantize

KEEP_FLOAT = "keep-float"
OVERRIDE = "override"
#: the quantizer's own default (litert quantize's), when nothing better is known
DEFAULT_BASE = "dynamic_wi8_afp32"


def float_tensors(report: Any, rows: Sequence[dict]) -> tuple[tuple[int, int], ...]:
    """The float tensors (subgraph, tensor) the ``rows`` (the table's rows: subgraph and
    tensor of the quantized model) pair with; a ValueError saying why when none has one."""
    out = []
    for row in rows:
        t = report.tensor(int(row["tensor"]), int(row.get("subgraph", 0)))
        if t is not None and t.float_tensor is not None and t.op is not None:
            key = (t.float_subgraph or 0, t.float_tensor)
            if key not in out:
                out.append(key)
    if not out:
        raise ValueError("none of the selected rows is an op output paired with a float "
                         "tensor (a model input, or a tensor left unpaired): select others")
    return tuple(out)


def float_selectors(float_model: Model, tensors: Sequence[tuple[int, int]]) -> list[str]:
    """The quantizer's selectors (``N``, ``S:N``) of the float ops producing ``tensors``,
    in model order; a ValueError when none is produced by an op."""
    ops: set[tuple[int, int]] = set()
    for s, t in tensors:
        producer = next((o.index for o in float_model.subgraphs[s].operators
                         if t in o.outputs), None)
        if producer is not None:
            ops.add((s, producer))
    if not ops:
        raise ValueError("no op of the float model produces the selected tensors")
    return [f"{s}:{k}" if s else str(k) for s, k in sorted(ops)]


def guess_base(report: Any, names: Sequence[str]) -> str | None:
    """The quantizer's recipe that writes the weights' most common form in ``report``
    (``dynamic_wi4b32_afp32`` for INT4 blocks of 32 read by float ops), when one of
    ``names`` does; None when the form is not one a named recipe writes."""
    if report is None or not report.forms:
        return None
    form = report.forms[0]
    bits = re.fullmatch(r"U?INT(\d+)", form["type_name"] or "")
    usage = form["usage"]
    if bits is None:
        return None
    b = bits.group(1)
    if usage == "dynamic":
        name = (f"dynamic_wi{b}b{form['block_size']}_afp32" if form["block_size"]
                else f"dynamic_wi{b}_afp32")
    elif usage == "weight-only":
        name = f"weight_only_wi{b}_afp32"
    elif usage.startswith("static a"):
        name = f"static_wi{b}_ai{usage.removeprefix('static a').split('w')[0]}"
    else:
        return None
    return name if name in names else None


@dataclass(frozen=True)
class Request:
    """What the dialog asked for: the float ops producing ``tensors`` (float subgraph,
    tensor; `float_tensors`) kept in float (``action`` `KEEP_FLOAT`) or quantized with
    ``recipe`` (`OVERRIDE`), on top of ``base``; the model goes to ``output``, the recipe to ``recipe_path`` when given.
    ``samples`` and ``sample_kwargs`` (the dock's sample choice, as `SampleChoice.
    analysis_kwargs` gives it) calibrate a recipe that needs it."""

    float_path: Path
    base: str
    action: str
    tensors: tuple[tuple[int, int], ...]
    output: Path
    recipe: str | None = None
    recipe_path: Path | None = None
    samples: int = 10
    sample_kwargs: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.action not in (KEEP_FLOAT, OVERRIDE):
            raise ValueError(f"action {self.action!r}: {KEEP_FLOAT} or {OVERRIDE}")
        if self.action == OVERRIDE and not self.recipe:
            raise ValueError("quantizing the selected ops needs the recipe to use")
        if not self.tensors:
            raise ValueError("no op selected")

    def describe(self) -> str:
        n = len(self.tensors)
        ops = f"{n} op{'s' if n != 1 else ''}"
        what = "in float" if self.action == KEEP_FLOAT else f"with {self.recipe}"
        return f"{self.base}, {ops} {what}"

    def build(self, float_model: Model) -> recipes.Recipe:
        """The recipe, in the quantizer's JSON format (`recipes.build_recipe`)."""
        selectors = float_selectors(float_model, self.tensors)
        if self.action == KEEP_FLOAT:
            return recipes.build_recipe(float_model, self.base, keep_float=selectors)
        return recipes.build_recipe(float_model, self.base,
                                    overrides=[(s, self.recipe) for s in selectors])

    def calibration(self, float_model: Model, recipe: recipes.Recipe) -> dict | None:
        """The calibration data of a recipe that needs it, from the dock's samples."""
        if not recipes.needs_calibration(recipe):
            return None
        kw = dict(self.sample_kwargs)
        return requantize.calibration_samples(
            float_model, count=self.samples, npz=kw.get("inputs"), images=kw.get("images"),
            given=kw.get("given"), signature=kw.get("signature"))


@dataclass(frozen=True)
class Result:
    """What `run` wrote."""

    request: Request
    recipe: recipes.Recipe
    size: int
    seconds: float

    def summary(self) -> str:
        saved = f"; recipe saved to {self.request.recipe_path.name}" \
            if self.request.recipe_path else ""
        return (f"Wrote {self.request.output.name} ({self.size / 1024:,.0f} KB: "
                f"{self.request.describe()}) in {self.seconds:.1f} s{saved}")


def run(request: Request, progress: requantize.Progress | None = None,
        cancel: Callable[[], bool] | None = None) -> Result:
    """Build, quantize and write (see the module docstring): `recipes.QuantizerMissing`
    without the quantizer, `recipes.RecipeError` / `requantize.QuantizeError` with the
    reason, `quant.analysis.Cancelled` when ``cancel()`` turned True."""
    t0 = time.perf_counter()
    recipes.quantizer()
    float_model = load_model(request.float_path)
    recipe = request.build(float_model)
    samples = request.calibration(float_model, recipe)
    data = requantize.quantize(request.float_path, recipe, samples, progress, cancel)
    requantize.write_model(request.output, data)
    if request.recipe_path is not None:
        requantize.write_model(request.recipe_path,
                               (json.dumps(recipe, indent=2) + "\n").encode())
    return Result(request, recipe, len(data), time.perf_counter() - t0)
