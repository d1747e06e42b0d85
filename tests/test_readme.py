"""The README's two commands are the ones CI and users run, and it names what they install."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_test_command():
    first = re.search(r"^```sh\n(.*?)^```", README, re.M | re.S).group(1)
    commands = [line.strip() for line in first.splitlines() if line.strip()]
    assert commands == ['python -m pip install -e . && tflite-viewer',
                        'python -m pip install -e ".[test]" && python -m pytest']
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line and not line.startswith("#") and not line.startswith(("set ", "cd "))]
    assert ci == [commands[1]]


def test_the_readme_names_every_test_dependency():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["test"]
    names = {re.split(r"[<>=;\s\[]", req, maxsplit=1)[0] for req in extra}
    assert names and all(name in README for name in names), \
        [n for n in names if n not in README]


def test_the_figures_say_how_to_reproduce_them():
    from tests.test_docs import inline_commands
    commands = [c for c, _ in inline_commands(ROOT / "README.md")]
    assert len(commands) >= 8 and all(c.startswith(("python ", "tflite-viewer ")) for c in commands)
