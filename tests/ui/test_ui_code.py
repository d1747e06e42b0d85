"""Issue 41's code items for the window (tflite_viewer/ui and cli/window.py), checked on the
source: functions of at most 100 lines, modules of at most 600, no function that nothing
calls, and nothing outside `main_window` setting attributes on the window or finding a menu
by its label.  The checks are plain `ast` walks (the project's own equivalent of vulture
for this package): each is shown to catch a planted case."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UI = ROOT / "tflite_viewer" / "ui"
CHECKED = sorted(UI.rglob("*.py")) + [ROOT / "tflite_viewer" / "cli" / "window.py"]
#: where a use of a name may be (the package, its tests, benchmarks and tools)
USERS = [p for d in ("tflite_viewer", "tests", "benchmarks", "tools") for p in (ROOT / d).rglob("*.py")]
#: Qt calls these (virtual methods and Qt's model API), never the project's code
QT_OVERRIDES = {"run", "paint", "data", "flags", "setData", "headerData", "rowCount",
                "columnCount", "index", "parent", "lessThan", "sizeHint", "minimumSizeHint",
                "boundingRect", "shape", "eventFilter", "textFromValue", "valueFromText",
                "validate", "createEditor", "setEditorData", "setModelData", "displayText",
                "heightForWidth", "hasHeightForWidth", "canFetchMore", "fetchMore",
                "filterAcceptsRow", "mimeData", "itemChange", "sceneEventFilter"}
MAX_FUNCTION, MAX_MODULE = 100, 600


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:  # a planted file
        return path.name


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def long_functions(paths) -> list[str]:
    out = []
    for path in paths:
        for f in _functions(ast.parse(path.read_text())):
            start = min([f.lineno] + [d.lineno for d in f.decorator_list])
            if f.end_lineno - start + 1 > MAX_FUNCTION:
                out.append(f"{_rel(path)}:{f.name} {f.end_lineno - start + 1}")
    return out


def used_names(paths) -> set[str]:
    """Every name, attribute and word of a string in ``paths`` (a getattr by name, a
    signal connected by its name, a docstring's `reference` does not count: only code)."""
    names: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    len(node.value) < 80 and re.fullmatch(r"[A-Za-z_]\w*", node.value):
                names.add(node.value)
    return names


def dead_functions(paths, users) -> list[str]:
    used = used_names(users)
    out = []
    for path in paths:
        for f in _functions(ast.parse(path.read_text())):
            name = f.name
            if name.startswith("__") or name in QT_OVERRIDES or name.endswith("Event"):
                continue
            if any(isinstance(d, ast.Name) and d.id in ("property", "staticmethod")
                   or isinstance(d, ast.Attribute) and d.attr in ("setter", "register")
                   for d in f.decorator_list) and name in used:
                continue
            if name not in used:
                out.append(f"{_rel(path)}:{f.lineno} {name}")
    return out


def window_attributes_set_outside(paths) -> list[str]:
    """``window.x = ...`` (or ``w.x``, ``self.window.x``, ``ctl.window.x`` ...) anywhere
    but in main_window.py: a part patching the window from outside."""
    out = []
    for path in paths:
        if path.name == "main_window.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                for sub in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(sub, ast.Attribute) and _is_window(sub.value):
                        out.append(f"{_rel(path)}:{node.lineno} .{sub.attr}")
    return out


def _is_window(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("window", "win")
    return isinstance(node, ast.Attribute) and node.attr in ("window", "w") and \
        isinstance(node.value, ast.Name)


def menus_found_by_label(paths) -> list[str]:
    pattern = re.compile(r"""text\(\)\s*==\s*["']&(File|Edit|View|Go|Help|Debug)["']|"""
                         r"""replace\(["']&["'],\s*["']["']\)\s*==""")
    return [f"{_rel(p)}" for p in paths if pattern.search(p.read_text())]


def test_no_function_over_100_lines_and_no_module_over_600():
    assert long_functions(CHECKED) == []
    too_long = [f"{_rel(p)} {n}" for p in CHECKED
                if (n := len(p.read_text().splitlines())) > MAX_MODULE]
    assert too_long == []


def test_no_function_of_the_window_is_dead():
    assert dead_functions(sorted(UI.rglob("*.py")), USERS) == []


def test_nothing_patches_the_window_from_outside():
    assert window_attributes_set_outside(CHECKED) == []
    assert menus_found_by_label(CHECKED) == []


def test_the_launch_options_are_read_once():
    """cli/window.py parses them; the window takes one `Launch` and reads no Namespace."""
    app = (UI / "app.py").read_text()
    assert "getattr(args" not in app and "Namespace" not in app
    assert "def run_app(launch: Launch)" in app


def test_each_check_catches_what_it_is_for(tmp_path):
    bad = tmp_path / "planted.py"
    body = "\n".join(f"    x{k} = {k}" for k in range(101))
    bad.write_text("def long_one():\n" + body + "\n\n\ndef nobody_calls_me():\n    return 1\n\n\n"
                   "def patch(window):\n    window.memory_dock = 1\n\n\n"
                   "def find(bar):\n    return [a for a in bar.actions() if a.text() == '&View']\n")
    assert long_functions([bad]) == ["planted.py:long_one 102"]
    assert any("nobody_calls_me" in d for d in dead_functions([bad], [bad]))
    patched = window_attributes_set_outside([bad])
    assert len(patched) == 1 and patched[0].endswith(".memory_dock")
    assert menus_found_by_label([bad])
