"""The tutorials of docs/tutorials/ run as printed: each page's ```bash and ```python
blocks, in order, in one empty directory (as tests/test_readme.py runs the README);
and every page of docs/ is in the site's navigation (mkdocs.yml)."""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fastsched

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))

PRELUDE = """set -e
python() { "$TUTORIAL_PYTHON" "$@"; }
fastsched() { "$TUTORIAL_PYTHON" -m fastsched.cli "$@"; }
"""

#: extras a page needs: (module, the extra that installs it)
NEEDS = {"rl-agent.md": ("gymnasium", "rl"), "sweep-ray.md": ("ray", "ray")}


def code_blocks(page: Path) -> list[tuple[str, str]]:
    return re.findall(r"^```(bash|python)\n(.*?)^```", page.read_text(), re.S | re.M)


def test_every_tutorial_has_code_and_says_this_test_runs_it():
    assert {p.name for p in TUTORIALS} == {"replay-sacct.md", "tune-backfill.md",
                                           "embed-scheduler.md", "rl-agent.md",
                                           "sweep-ray.md"}
    for page in TUTORIALS:
        assert code_blocks(page), page.name
        assert "tests/test_tutorials.py" in page.read_text(), page.name


@pytest.mark.parametrize("page", TUTORIALS, ids=[p.name for p in TUTORIALS])
def test_the_tutorial_runs_as_written(page, tmp_path, monkeypatch):
    module, extra = NEEDS.get(page.name, (None, None))
    if module and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not installed (pip install 'fastsched[{extra}]')")
    monkeypatch.chdir(tmp_path)
    package_root = str(Path(fastsched.__file__).resolve().parents[1])
    env = dict(os.environ, TUTORIAL_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(filter(None, [package_root,
                                                        os.environ.get("PYTHONPATH")])))
    namespace: dict = {}
    for k, (lang, text) in enumerate(code_blocks(page)):
        if lang == "python":
            exec(compile(text, f"{page.name} python block {k}", "exec"), namespace)
            continue
        r = subprocess.run(["bash", "-c", PRELUDE + text], cwd=tmp_path, env=env,
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, f"bash block {k}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"


def nav_pages(text: str) -> list[str]:
    """The .md files mkdocs.yml's nav names (the nav is the file's last section)."""
    nav = text[text.index("\nnav:"):]
    return re.findall(r"([\w/-]+\.md)\s*$", nav, re.M)


def test_every_docs_page_is_in_the_site_nav():
    config = (ROOT / "mkdocs.yml").read_text()
    assert re.search(r"^docs_dir: docs$", config, re.M)
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    listed = nav_pages(config)
    assert sorted(listed) == sorted(set(listed)), "a page is in the nav twice"
    assert set(listed) == pages
