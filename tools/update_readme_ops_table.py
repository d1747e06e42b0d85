"""Rewrite README.md's op coverage table (between the ops-table markers) from
`tflite-viewer ops --markdown`.

    python tools/update_readme_ops_table.py
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tflite_viewer.cli.ops import markdown  # noqa: E402
from tflite_viewer.interpreter.coverage import coverage  # noqa: E402


def main() -> int:
    readme = ROOT / "README.md"
    text = readme.read_text()
    new, count = re.subn(r"(<!-- ops-table:start -->\n).*?(<!-- ops-table:end -->)",
                         lambda m: m.group(1) + markdown(coverage()) + m.group(2), text,
                         flags=re.S)
    if count != 1:
        raise SystemExit("README.md lacks the ops-table markers")
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
