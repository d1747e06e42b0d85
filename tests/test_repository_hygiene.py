"""Rules of docs/ARCHITECTURE.md that no linter checks, kept true by the suite:

* small modules: no hand-written module of the package is longer than ``MAX_LINES``
  (generated code and the documented exceptions below aside), so a file that grows past
  its seams fails here rather than in a reviewer's read;
* functions that do one thing: none longer than ``MAX_FUNCTION_LINES``, from its ``def``
  line to its last (the exceptions below aside);
* no committed merge-conflict markers: a merge once left one in a benchmark's docstring,
  where nothing else would ever have noticed it;
* a README a newcomer reads in five minutes: at most ``README_MAX_LINES`` lines (the user
  guide lives in docs/).
"""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tflite_viewer"
MAX_LINES = 600
README_MAX_LINES = 200
GENERATED_MARK = "# GENERATED FILE - DO NOT EDIT."

# Modules allowed over MAX_LINES, each with the reason docs/ARCHITECTURE.md gives (none
# today: the layout, the last one, is a package with a module per phase).
EXCEPTIONS: frozenset[str] = frozenset()

MAX_FUNCTION_LINES = 100
# Functions allowed over MAX_FUNCTION_LINES ("module path::qualified name"), each with why.
FUNCTION_EXCEPTIONS: dict[str, str] = {
    "edit/op_version.py::required_version":
        "one copy of one C++ switch: LiteRT's GetBuiltinOperatorVersion, case by case",
}

# The markers git writes into a conflicted file: seven characters at a line's start.
_CONFLICT = re.compile(r"^(?:<{7} |>{7} |={7}$)", re.MULTILINE)


def oversized_modules(package: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """Hand-written modules below ``package`` longer than ``limit`` lines, by relative path."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.startswith(GENERATED_MARK):
            continue
        lines = text.count("\n") + (not text.endswith("\n") and bool(text))
        if lines > limit:
            found[path.relative_to(package).as_posix()] = lines
    return found


def long_functions(package: Path, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """Functions and methods of hand-written modules below ``package`` longer than
    ``limit`` lines (``def`` line to last line, decorators left out), by
    "relative path::qualified name"."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.startswith(GENERATED_MARK):
            continue
        where = path.relative_to(package).as_posix()
        stack: list[tuple[ast.AST, str]] = [(ast.parse(text), "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                name = prefix
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        lines = child.end_lineno - child.lineno + 1
                        if lines > limit:
                            found[f"{where}::{name}"] = lines
                    name += "."
                stack.append((child, name))
    return found


def conflict_marker_lines(text: str) -> list[int]:
    """1-based numbers of the lines of ``text`` that are merge-conflict markers."""
    return [text.count("\n", 0, m.start()) + 1 for m in _CONFLICT.finditer(text)]


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                         check=True).stdout
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_hand_written_module_exceeds_the_line_limit():
    over = {p: n for p, n in oversized_modules(PACKAGE).items() if p not in EXCEPTIONS}
    assert not over, f"modules over {MAX_LINES} lines (split them along a seam): {over}"


def test_the_listed_exceptions_exist_and_still_need_to_be():
    # An exception that shrank below the limit, or moved, should leave the list.
    over = oversized_modules(PACKAGE)
    assert EXCEPTIONS <= set(over), EXCEPTIONS - set(over)


def test_the_size_check_sees_a_long_module_and_skips_generated_code(tmp_path):
    (tmp_path / "long.py").write_text("x = 1\n" * 12)
    (tmp_path / "gen.py").write_text(GENERATED_MARK + "\n" + "x = 1\n" * 30)
    (tmp_path / "short.py").write_text("x = 1\n" * 10)
    assert oversized_modules(tmp_path, limit=10) == {"long.py": 12}


def test_no_function_exceeds_the_line_limit():
    over = {f: n for f, n in long_functions(PACKAGE).items() if f not in FUNCTION_EXCEPTIONS}
    assert not over, (f"functions over {MAX_FUNCTION_LINES} lines (split them into steps "
                      f"that each do one thing): {over}")


def test_the_listed_function_exceptions_still_need_to_be():
    # one that shrank below the limit, or was renamed or moved, should leave the list
    over = long_functions(PACKAGE)
    assert set(FUNCTION_EXCEPTIONS) <= set(over), set(FUNCTION_EXCEPTIONS) - set(over)


def test_the_function_check_counts_methods_nested_functions_and_not_decorators(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(9))  # 9 lines
    (tmp_path / "m.py").write_text(
        "@decorator\n@another\ndef short():\n" + body[:-len("    x8 = 8\n")] +
        "\n\nclass C:\n    def method(self):\n" + body.replace("    ", "        ") +
        "        return 1\n\n\ndef outer():\n    def inner():\n" +
        body.replace("    ", "        ") + "    return inner\n")
    (tmp_path / "gen.py").write_text(GENERATED_MARK + "\ndef generated():\n" + body * 3)
    # short: 9 lines (11 with its decorators, which do not count)
    assert long_functions(tmp_path, limit=9) == {
        "m.py::C.method": 11, "m.py::outer": 12, "m.py::outer.inner": 10}
    assert long_functions(tmp_path, limit=10) == {"m.py::C.method": 11, "m.py::outer": 12}


def test_the_marker_check_finds_each_marker_and_nothing_else():
    text = "\n".join(["a", "<" * 7 + " HEAD", "b", "=" * 7, "c", ">" * 7 + " main",
                      "=" * 8, "Title", "=" * 7 + " not bare", "  " + "<" * 7 + " indented"])
    assert conflict_marker_lines(text) == [2, 4, 6]


def test_no_tracked_file_holds_a_merge_conflict_marker():
    found = {}
    for path in tracked_files():
        if not path.is_file():
            continue  # deleted in the working tree, not yet committed
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary (models, images)
        lines = conflict_marker_lines(data.decode("utf-8", errors="replace"))
        if lines:
            found[path.relative_to(ROOT).as_posix()] = lines
    assert not found, f"merge-conflict markers (file: line numbers): {found}"


def test_the_readme_stays_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move detail to docs/")
