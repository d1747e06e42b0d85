"""No dead code in the package: vulture finds every function, class, method, attribute or
variable of tflite_viewer/ that nothing reads, and the suite fails on each one that
tests/dead_code_allowlist.py does not name with a reason.

The package is scanned together with tools/ and benchmarks/ (they call into it); tests/ is
not a caller here, so a function only the tests call must be listed, and says so.  Generated
code (the schema modules) is left out, and so are the kernel classes `@register` files in
the op resolver.  One scan serves both checks: listing a name in the allow-list only marks
it used, so the findings without the list, less the listed names, are the findings with it.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import vulture

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tflite_viewer"
ALLOWLIST = Path(__file__).with_name("dead_code_allowlist.py")
CALLERS = (ROOT / "tools", ROOT / "benchmarks")
GENERATED_MARK = "# GENERATED FILE - DO NOT EDIT."
#: decorators whose functions or classes are used by being decorated
USED_BY_DECORATOR = ["@register"]


def hand_written(folder: Path) -> list[str]:
    return [str(p) for p in sorted(folder.rglob("*.py"))
            if not p.read_text(encoding="utf-8").startswith(GENERATED_MARK)]


def unused(package: Path, callers: tuple[Path, ...] = ()) -> list[vulture.core.Item]:
    """What vulture finds unused in ``package`` (read with ``callers``), by file and line."""
    v = vulture.Vulture(ignore_decorators=USED_BY_DECORATOR)
    v.scavenge(hand_written(package) + [p for c in callers for p in hand_written(c)])
    items = [i for i in v.get_unused_code(min_confidence=0)
             if Path(i.filename).resolve().is_relative_to(package.resolve())]
    return sorted(items, key=lambda i: (str(i.filename), i.first_lineno))


def allowed_names(allowlist: Path = ALLOWLIST) -> set[str]:
    """The names the allow-list marks used: each ``_.name`` of it."""
    tree = ast.parse(allowlist.read_text(encoding="utf-8"))
    return {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "_"}


@lru_cache(maxsize=1)
def package_findings() -> tuple[vulture.core.Item, ...]:
    return tuple(unused(PACKAGE, CALLERS))


def describe(item: vulture.core.Item) -> str:
    where = Path(item.filename).resolve().relative_to(ROOT)
    return f"{where}:{item.first_lineno}: {item.message}"


def test_nothing_in_the_package_is_dead():
    allowed = allowed_names()
    dead = [describe(i) for i in package_findings() if i.name not in allowed]
    assert not dead, ("unused code (delete it, or name it in tests/dead_code_allowlist.py "
                      "with the reason it stays):\n" + "\n".join(dead))


def test_every_allowed_name_is_still_reported():
    # a name that is used now, or whose definition went, should leave the list
    reported = {i.name for i in package_findings()}
    stale = sorted(allowed_names() - reported)
    assert not stale, f"no longer reported by vulture, remove from the allow-list: {stale}"


def test_the_check_sees_dead_code_and_what_callers_use(tmp_path):
    package, caller = tmp_path / "pkg", tmp_path / "tool"
    package.mkdir(), caller.mkdir()
    (package / "mod.py").write_text(
        "def register(f):\n    return f\n\n\n@register\nclass Kernel:\n    pass\n\n\n"
        "def used_by_tool():\n    pass\n\n\ndef dead():\n    pass\n\n\n"
        "class Widget:\n    def paint(self):\n        pass\n")
    (package / "gen.py").write_text(GENERATED_MARK + "\ndef generated():\n    pass\n")
    (caller / "tool.py").write_text("from pkg.mod import used_by_tool\nused_by_tool()\n")
    names = {i.name for i in unused(package, (caller,))}
    assert names == {"dead", "Widget", "paint"}
    allow = tmp_path / "allow.py"
    allow.write_text("_.paint  # a toolkit calls it\nfoo.bar\n")
    assert allowed_names(allow) == {"paint"}
