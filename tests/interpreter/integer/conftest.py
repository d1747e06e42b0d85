"""Report where LiteRT's optimized kernels disagree with its reference kernels.

These are LiteRT's own differences (its optimized kernels round some requantizations
differently from its reference kernels), found while the integer tests run; they are not
failures of ours.  The table is printed with ``pytest -v`` only, so a plain run's summary
holds nothing that reads like a failure.
"""
from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from .harness import RESOLVER_DISAGREEMENTS

    if not RESOLVER_DISAGREEMENTS or config.getoption("verbose") < 1:
        return
    terminalreporter.section("LiteRT's own kernels: BUILTIN_WITHOUT_DEFAULT_DELEGATES vs "
                             "BUILTIN_REF (information, not failures)")
    for key, (bad, total) in sorted(RESOLVER_DISAGREEMENTS.items()):
        terminalreporter.write_line(f"{key:40s} {bad:7d} of {total:8d} outputs differ")
