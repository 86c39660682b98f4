"""The README runs as printed: its ```bash and ```python blocks, in order, in one
empty directory; ``fastsched`` and ``python`` are the package and interpreter under
test (``python -m fastsched.cli``)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import fastsched

README = Path(__file__).resolve().parents[1] / "README.md"

#: the only commands not run, and why
NOT_RUN = {
    "pip install": "installs a package; the test runs the copy under test",
    "python -m pytest": "the test suite itself",
}

PRELUDE = """set -e
python() { "$README_PYTHON" "$@"; }
fastsched() { "$README_PYTHON" -m fastsched.cli "$@"; }
"""


def code_blocks() -> list[tuple[str, str]]:
    """(language, text) of every ```bash and ```python block, in README order."""
    return re.findall(r"^```(bash|python)\n(.*?)^```", README.read_text(), re.S | re.M)


def runnable(script: str) -> str:
    """``script`` without the commands of :data:`NOT_RUN` (also inside ``a && b``)."""
    lines = []
    for line in script.splitlines():
        commands = [c for c in line.split(" && ") if not c.lstrip().startswith(tuple(NOT_RUN))]
        lines.append(" && ".join(commands))
    return "\n".join(lines) + "\n"


def test_first_screen_installs_demos_and_tests():
    lang, first = code_blocks()[0]
    commands = [line.split("#")[0].strip() for line in first.splitlines()]
    assert lang == "bash" and commands == ['pip install -e ".[test]" && fastsched compile '
                                           '&& fastsched demo',
                                           "python -m pytest -q -n auto"]


def test_not_run_drops_only_the_marked_commands():
    assert runnable('pip install -e ".[test]" && fastsched demo   # x\npython -m pytest -q\n'
                    "fastsched --help\n") == "fastsched demo   # x\n\nfastsched --help\n"


def test_readme_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    package_root = str(Path(fastsched.__file__).resolve().parents[1])
    env = dict(os.environ, README_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(filter(None, [package_root,
                                                        os.environ.get("PYTHONPATH")])))
    namespace: dict = {}
    blocks = code_blocks()
    assert [lang for lang, _ in blocks].count("python") >= 3
    for k, (lang, text) in enumerate(blocks):
        if lang == "python":
            exec(compile(text, f"README.md python block {k}", "exec"), namespace)
            continue
        r = subprocess.run(["bash", "-c", PRELUDE + runnable(text)], cwd=tmp_path, env=env,
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, f"bash block {k}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    # what the command line wrote is what the site example read
    assert len(namespace["workload"]) == 2000
    assert namespace["result"].summary["jobs"] == 2000
