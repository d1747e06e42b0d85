"""The command line run in this process: what a subprocess of ``python -m tflite_viewer``
gives (exit code, stdout, stderr), without paying for a new interpreter, numpy and the
model package on every call (about 1.3 s each on the 2-core CI machine).

`tflite_viewer.cli.main` is what the program runs (`entry` adds only the collector's
thresholds), so its exit code and streams are the program's.  Two things a child process
shows that a call inside pytest would hide are put back: the warnings Python prints to
stderr (pytest records them instead; a RuntimeWarning on stderr breaks the CLI's "one line
on stderr" contract, so it must break these tests too), and a traceback (an undocumented
exception propagates out of `main` and fails the test).  A few tests per command keep a
true subprocess for the entry point itself (`python -m tflite_viewer`).
"""
from __future__ import annotations

import contextlib
import io
import subprocess
import warnings

from tflite_viewer.cli import main

#: the categories a Python process does not print by default (its default filters)
_HIDDEN = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def run_cli(*args) -> subprocess.CompletedProcess:
    """``tflite-viewer ARGS`` in this process: a CompletedProcess with text stdout and
    stderr, stderr holding each distinct warning as Python's default filter prints it."""
    argv = [str(a) for a in args]
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        code = main(argv)
    shown = dict.fromkeys((str(w.message), w.category, w.filename, w.lineno)
                          for w in caught if not issubclass(w.category, _HIDDEN))
    printed = "".join(warnings.formatwarning(m, c, f, n) for m, c, f, n in shown)
    stdout = out.buffer.getvalue().decode("utf-8", errors="replace")
    return subprocess.CompletedProcess(["tflite-viewer", *argv], code, stdout,
                                       err.getvalue() + printed)
