"""The wheel ships every package of the source tree: pyproject.toml lists packages by hand
(the resources folder is mapped into the package), so a new subpackage must be added there
or a regular (non-editable) install would miss it."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_source_package_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "tflite_viewer").rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - found == {"tflite_viewer.resources"}
