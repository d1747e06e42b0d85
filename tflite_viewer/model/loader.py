"""Opening a model: map the file, verify it, wrap it in views, check it."""
from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Union

import numpy as np

from ..schema.schema_layout import LAYOUT
from .checks import check_model
from .errors import ModelFormatError
from .external import SideFiles, WeightSource, check_external
from .litertlm import is_container, load_container, path_is_container
from .model import Model
from .verify import verify_buffer

Source = Union[str, os.PathLike, bytes, bytearray, memoryview, mmap.mmap]


def load_model(source: Source, *, weights_dir: str | os.PathLike | None = None,
               weights: WeightSource | None = None, section: int | None = None) -> Model:
    """Open a .tflite file (memory-mapped, nothing read until asked) or model bytes.

    Raises ModelFormatError, naming where, for anything that is not a sound model; OSError
    for files that cannot be opened.  Weights are never read here: tensors' data are views.
    External buffers (side files) are looked for in the model file's folder, in
    ``weights_dir`` when given (model bytes have no folder), or in ``weights``; a missing
    side file is a load finding, and a ModelFormatError naming the file when its values
    are read or run.

    A LiteRT-LM container (.litertlm) opens its TFLiteModel section ``section`` (the first
    one by default): `litertlm.load_container` lists them all.  A memoryview is read in
    place (a section of a mapped container), never copied.
    """
    path: Path | None = None
    if isinstance(source, (mmap.mmap, memoryview)):  # an edited state, a section: no copy
        buf = source
    elif isinstance(source, (bytes, bytearray)):
        buf = bytes(source) if not isinstance(source, bytes) else source
        if is_container(buf):
            return load_container(buf).open_model(section)
    else:
        path = Path(source)
        if path_is_container(path):
            return load_container(path).open_model(section)
        buf = _map_file(path)
    data = np.frombuffer(buf, dtype=np.uint8)
    data.flags.writeable = False
    index = verify_buffer(LAYOUT, data, LAYOUT["file_identifier"])
    if weights is None and weights_dir is not None:
        weights = SideFiles(weights_dir)
    model = Model(buf, data, path, index, weights)
    model.findings.extend(check_model(model, index))
    model.findings.extend(check_external(model))
    return model


def _map_file(path: Path) -> mmap.mmap | bytes:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise ModelFormatError("<file>", f"{path.name} is empty")
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
