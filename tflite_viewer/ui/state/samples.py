"""Where the numbers of the window come from (no Qt): the one choice of samples that the
quantization analysis and Run Both share.

A `SampleChoice` is seeded samples, a folder of images, an .npz of inputs, or the inputs
of the debugger session, and how many.  The Quantization dock's source picker and count
edit it; Run Both (File > Compare With) runs on the same choice, so that both give the
same numbers for the same tensor; every result says which inputs it ran on (`describe`).
Seeded samples are made from the float model's inputs when one of the two models is
float, as the analysis makes them (`quant.analysis.make_samples`): a quantized input's
seeded values span its whole integer range, a float model's look like data.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEEDED, IMAGES, NPZ, DEBUGGER = "seeded", "images", "npz", "debugger"
SEED = 0

@dataclass
class SampleChoice:
    """See the module docstring.  ``count`` is how many samples (seeded, or the first
    of the folder / file); the debugger session's inputs are one sample."""

    kind: str = SEEDED
    images_dir: str = ""
    npz_path: str = ""
    count: int = 10

    def analysis_kwargs(self, session: Any = None) -> dict[str, Any]:
        """`quant.analyze` / `diff.numeric.compare_numbers` keyword arguments (besides the
        count); ``session`` is the debugger session's (inputs, signature) or None, and a
        choice of it without one is a ValueError."""
        if self.kind == IMAGES:
            return {"images": self.images_dir}
        if self.kind == NPZ:
            return {"inputs": self.npz_path}
        if self.kind == DEBUGGER:
            if session is None:
                raise ValueError("the debug session has ended: choose another source")
            inputs, signature = session
            return {"given": [dict(inputs)], "signature": signature}
        return {}

    @property
    def samples(self) -> int:
        return 1 if self.kind == DEBUGGER else self.count

    def source_text(self) -> str:
        """Where the samples come from ("seeded, seed 0", "images in photos/" ...)."""
        if self.kind == IMAGES:
            return f"images in {Path(self.images_dir).name or self.images_dir}/"
        if self.kind == NPZ:
            return f"inputs in {Path(self.npz_path).name}"
        if self.kind == DEBUGGER:
            return "the debugger session's inputs"
        return f"seeded, seed {SEED}"

    def describe(self, count: int | None = None) -> str:
        """What numbers ran (or will run) on, for a status line: "10 samples (seeded, seed
        0)"; ``count`` the samples a run took (default: as many as chosen, at most)."""
        n = self.samples if count is None else count
        up_to = "up to " if count is None and self.kind in (IMAGES, NPZ) else ""
        return f"{up_to}{n} sample{'s' if n != 1 else ''} ({self.source_text()})"

def seeded_source(a: Any, b: Any) -> Any:
    """The model whose inputs seeded samples are made from, of two compared: the float
    one (what the quantization analysis seeds from), else A."""
    def is_float(model) -> bool:
        sg = model.subgraphs[0]
        return all(sg.tensors[i].quantization is None or not sg.tensors[i].quantization.has_scale
                   for i in sg.inputs if i >= 0)
    return b if is_float(b) and not is_float(a) else a


def run_both_kwargs(choice: SampleChoice, a: Any, b: Any, session: Any = None) -> dict[str, Any]:
    """`compare_numbers` keyword arguments for ``choice`` on models ``a`` and ``b``: seeded
    samples are made from the float model's inputs, as the analysis makes them."""
    if choice.kind != SEEDED:
        kwargs = choice.analysis_kwargs(session)
        kwargs.pop("signature", None)  # Run Both runs subgraph 0
        return dict(samples=choice.samples, **kwargs)
    from ...interpreter.inputs import input_specs
    from ...quant.samples import seeded_samples
    source = seeded_source(a, b)
    specs = input_specs(source)
    samples = seeded_samples(source, choice.count, SEED)
    known = {alias for spec in input_specs(b) for alias in spec.aliases}
    if all(spec.name in known for spec in specs):  # by name: the models may order them apart
        samples = [{spec.name: x for spec, x in zip(specs, s)} for s in samples]
    return {"samples": choice.count, "given": samples}
