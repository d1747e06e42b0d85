"""``python SCRIPT --help`` of the repository's benchmark and tool scripts, run once per
test session: `tests/test_cli_help.py` checks every benchmark answers it without running,
and `tests/test_docs.py` checks the options the docs pass each script are in its usage.
Each answer costs a Python start with numpy (1-2 s on the CI machine); asked by both, the
scripts ran twice."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_ANSWERS: dict[str, subprocess.CompletedProcess] = {}


def script_help(*scripts: str) -> list[subprocess.CompletedProcess]:
    """The ``--help`` run of each script (a path relative to the repository's root), those
    not yet asked started side by side."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = {s: subprocess.Popen([sys.executable, str(ROOT / s), "--help"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for s in dict.fromkeys(scripts) if s not in _ANSWERS}
    for script, proc in started.items():
        try:
            out, err = proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err += f"\n{script} --help did not answer in 180 s"
        _ANSWERS[script] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return [_ANSWERS[s] for s in scripts]
