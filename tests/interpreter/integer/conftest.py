"""Report where LiteRT's optimized kernels disagree with its reference kernels."""
from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    from .harness import RESOLVER_DISAGREEMENTS

    if not RESOLVER_DISAGREEMENTS:
        return
    terminalreporter.section("LiteRT BUILTIN_WITHOUT_DEFAULT_DELEGATES vs BUILTIN_REF")
    for key, (bad, total) in sorted(RESOLVER_DISAGREEMENTS.items()):
        terminalreporter.write_line(f"{key:40s} {bad:7d} of {total:8d} outputs differ")
