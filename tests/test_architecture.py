"""The layering of docs/ARCHITECTURE.md, enforced: the import-linter contracts in
pyproject.toml hold for the package, and each of them breaks on a deliberate violation
(so a contract that matches nothing cannot pass unnoticed)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from importlinter import configuration
from importlinter.application.use_cases import read_user_options

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
PACKAGE = ROOT / "tflite_viewer"


def lint_imports(package_parent: Path, contract: str | None = None) -> subprocess.CompletedProcess:
    """``lint-imports`` on the ``tflite_viewer`` found in ``package_parent`` (a subprocess,
    so that the import graph is built from that copy and not from the imported package)."""
    limit = f"limit_to_contracts=({contract!r},), " if contract else ""
    code = ("import sys; from importlinter.cli import lint_imports; "
            f"sys.exit(lint_imports(config_filename={str(PYPROJECT)!r}, {limit}"
            "no_cache=True, no_logo=True))")
    return subprocess.run([sys.executable, "-c", code], cwd=package_parent,
                          env={"PYTHONPATH": str(package_parent), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)


def contract_ids() -> list[str]:
    configuration.configure()
    return [c["id"] for c in read_user_options(str(PYPROJECT)).contracts_options]


def test_the_package_keeps_every_contract():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(contract_ids())} kept, 0 broken" in result.stdout


#: contract id -> (module file in the copy, the import that breaks it)
VIOLATIONS = {
    "layers": ("model/opcodes.py", "from ..edit import writer"),
    "qt-only-in-ui": ("edit/shapes.py", "import PySide6.QtCore"),
    "qt-only-in-ui-cli": ("cli/info.py", "from PySide6 import QtWidgets"),
    "ui-state-qt-free": ("ui/state/selection.py", "from PySide6 import QtCore"),
    "interpreter-not-edit": ("interpreter/inputs.py", "from ..edit import shapes"),
    "graph-not-interpreter": ("graph/build.py", "from ..interpreter import tensor"),
    "memory-reads-models": ("memory/sizes.py", "from ..edit import writer"),
    "ui-not-kernels": ("ui/state/summary.py", "from ...interpreter.kernels import common"),
    "targets-not-kernels": ("targets/fixes.py", "from ..interpreter.kernels import common"),
}


def test_every_contract_has_a_violation_below():
    assert sorted(VIOLATIONS) == sorted(contract_ids())


@pytest.fixture(scope="module")
def violating_copy(tmp_path_factory) -> Path:
    """A copy of the package with one violating import per contract."""
    parent = tmp_path_factory.mktemp("violating")
    shutil.copytree(PACKAGE, parent / "tflite_viewer",
                    ignore=shutil.ignore_patterns("__pycache__", "*_generated.py*"))
    for module, statement in VIOLATIONS.values():
        path = parent / "tflite_viewer" / module
        assert path.exists(), module
        path.write_text(path.read_text() + f"\n{statement}  # deliberate violation\n")
    return parent


@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_a_violation_breaks_its_contract(violating_copy, contract):
    result = lint_imports(violating_copy, contract)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout
    module, statement = VIOLATIONS[contract]
    importer = "tflite_viewer." + module.removesuffix(".py").replace("/", ".")
    assert importer in result.stdout, result.stdout
