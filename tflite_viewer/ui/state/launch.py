"""What `tflite-viewer [MODEL] ...` asks of the window, read once from the command line.

The command line (`cli.window`) parses and checks the arguments before Qt starts and hands
the window one `Launch`; the window (`ui.app`) reads its fields and parses nothing.
"""
from __future__ import annotations

from argparse import Namespace
from dataclasses import dataclass, fields
from pathlib import Path

#: the window's size in a screenshot (the README's pictures)
SCREENSHOT_SIZE = (1600, 1000)


@dataclass(frozen=True)
class Launch:
    """The model to open (None: the bundled sample), what to select and show, and with
    ``screenshot`` the PNG to draw the window to (headless) and what to run first."""

    model: Path | None = None
    select: str | None = None           # "op:N" or "tensor:N"
    subgraph: str | None = None         # index, name or signature key
    screenshot: Path | None = None
    size: tuple[int, int] = SCREENSHOT_SIZE
    run_to: int | None = None           # pause the debugger before this operator
    inputs: str | None = None           # an .npz of the run's inputs
    generate: int | None = None         # run as an LLM generating this many tokens
    prompt: str | None = None
    decode_step: int | None = None
    watch: tuple[str, ...] = ()         # tensors pinned in the Watch dock
    expand_composites: bool = False
    cross_check: bool = False
    compare_float: str | None = None    # the float model the Quantization dock compares with
    overlay: str | None = None          # the quantization metric the canvas is coloured by
    memory: bool = False
    target: str | None = None
    compare_with: str | None = None     # File > Compare With this model

    @classmethod
    def from_args(cls, args: Namespace) -> "Launch":
        """The launch the parsed command line asks for (`cli.window.build_parser`)."""
        given = vars(args)
        values = {f.name: given[f.name] for f in fields(cls) if f.name in given}
        for name in ("model", "screenshot"):
            if values.get(name) is not None:
                values[name] = Path(values[name])
        values["watch"] = tuple(values.get("watch") or ())
        return cls(**values)
