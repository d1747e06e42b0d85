"""Running one signature by its input and output names, as LiteRT's SignatureRunner."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .interpreter import Interpreter


class SignatureRunner:
    """Runs one signature by its input and output names (as LiteRT's SignatureRunner)."""

    def __init__(self, interpreter: Interpreter, key: str) -> None:
        self.interpreter = interpreter
        self.key = key
        self.signature_def = interpreter.model.signature(key)

    @property
    def input_names(self) -> list[str]:
        return [m.name for m in self.signature_def.inputs]

    @property
    def output_names(self) -> list[str]:
        return [m.name for m in self.signature_def.outputs]

    def __call__(self, **inputs: Any) -> dict[str, np.ndarray | None]:
        missing = set(self.input_names) - set(inputs)
        extra = set(inputs) - set(self.input_names)
        if missing or extra:
            raise KeyError(f"signature {self.key!r} takes inputs {self.input_names}"
                           f"{'; missing ' + str(sorted(missing)) if missing else ''}"
                           f"{'; unknown ' + str(sorted(extra)) if extra else ''}")
        return self.interpreter.invoke(inputs, signature=self.key)
