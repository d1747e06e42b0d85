"""Shared test setup: headless Qt, the model corpus, and the LiteRT oracle."""
from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

DATA = Path(__file__).parent / "data"
MODELS_DIR = DATA / "models"
CORPUS = sorted(MODELS_DIR.glob("*.tflite"))

# Models LiteRT 2.3.0 cannot load at all (the reason is part of what the tests check).
LITERT_REFUSES = {"person_detect.tflite"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true",
                     help="also run the slow tier (long sweeps, fuzz campaigns)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the slow tier unless --run-slow: each slow sweep keeps a small unmarked
    sample that CI runs, and pytest's summary counts what was deselected (never a skip)."""
    if config.getoption("--run-slow"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


def corpus_ids(paths):
    return [p.name for p in paths]


@pytest.fixture(scope="session")
def models_dir() -> Path:
    return MODELS_DIR


@pytest.fixture
def numpy_kernels(monkeypatch):
    """Every kernel in its numpy form: compiled kernels (`interpreter.compiled`) off."""
    from tflite_viewer.interpreter import compiled
    monkeypatch.setattr(compiled, "ON", False)


@pytest.fixture(params=["compiled", "numpy"])
def kernel_forms(request, monkeypatch):
    """Run a test with compiled kernels (where numba is installed) and in numpy alone."""
    from tflite_viewer.interpreter import compiled
    if request.param == "numpy":
        monkeypatch.setattr(compiled, "ON", False)
    elif compiled.loops() is None:
        pytest.fail("numba is a dependency: compiled kernels must load here")
    return request.param
