"""What installing fastsched needs: no hypothesis at run time, tomli on Python 3.10."""
import subprocess
import sys

import pytest


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_import_and_help_do_not_import_hypothesis():
    r = run_python("import sys, contextlib, io\n"
                   "import fastsched\n"
                   "from fastsched.cli import main\n"
                   "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
                   "    main(['--help'])\n"
                   "print(sorted(m for m in sys.modules if m.split('.')[0] == 'hypothesis'))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_testing_without_hypothesis_says_what_to_install():
    r = run_python("import sys; sys.modules['hypothesis'] = None\n"
                   "import fastsched.tools.testing")
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError:") and "pip install fastsched[testing]" in last


def test_config_reads_toml_through_tomli_without_tomllib():
    """Python 3.10 has no tomllib: the tomli backport (same API) stands in."""
    pytest.importorskip("tomllib")
    r = run_python("import sys, tomllib\n"
                   "sys.modules['tomli'], sys.modules['tomllib'] = tomllib, None\n"
                   "from fastsched.policy.config import parse_config\n"
                   "cfg = parse_config('[priority]\\nPriorityWeightAge = 7\\n')\n"
                   "print(cfg.weights.PriorityWeightAge)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["7"]


def test_hypothesis_is_an_extra_and_tomli_a_310_dependency():
    from pathlib import Path
    try:
        import tomllib
    except ImportError:                 # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml")
                            .read_text())["project"]
    names = [d.split(">")[0].split(";")[0].strip() for d in project["dependencies"]]
    assert "hypothesis" not in names
    assert "tomli>=1.1; python_version < '3.11'" in project["dependencies"]
    assert project["optional-dependencies"]["testing"] == ["hypothesis>=6.80"]
    assert "hypothesis>=6.80" in project["optional-dependencies"]["test"]


ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
#: tracked files the sdist leaves out on purpose: CI's script, the benchmarks (they need
#: the repository's history and machines), and files only git and asv read
NOT_IN_SDIST = (".ci/", ".gitignore", "asv.conf.json", "benchmarks/")


def sdist_files(root) -> set[str]:
    """What ``python -m build --sdist`` puts in, without building: setuptools' default
    files for this project (README, pyproject.toml, setup.py, MANIFEST.in, the packages'
    modules and package data, tests/test*.py, and the extension's sources as cythonize
    leaves them: the generated C, present or not), then MANIFEST.in through setuptools'
    own template interpreter."""
    from setuptools._distutils.filelist import FileList
    files = FileList()
    files.findall(".")
    names = set(files.allfiles)
    default = {"README.md", "pyproject.toml", "setup.py", "MANIFEST.in"}
    default |= {f for f in names if f.startswith("src/fastsched/")
                and (f.endswith(".py") or f.startswith("src/fastsched/data/"))}
    default |= {f for f in names if f.startswith("tests/test") and f.endswith(".py")}
    files.files = sorted((default & names) | {"kernels/_kernels.c"})
    for line in (root / "MANIFEST.in").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            files.process_template_line(line)
    return set(files.files)


def test_the_sdist_holds_every_tracked_source_and_no_generated_c(monkeypatch):
    """Every file git tracks is in the sdist but those of NOT_IN_SDIST: the Cython
    sources (the core is compiled from them, not from a shipped .c), the licence, the
    data files, the docs and the whole test suite with its twins and data."""
    r = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("not a git checkout (e.g. the sdist itself)")
    monkeypatch.chdir(ROOT)
    shipped = sdist_files(ROOT)
    tracked = set(r.stdout.split())
    for name in sorted(tracked):
        assert (name in shipped) != name.startswith(NOT_IN_SDIST), name
    assert "kernels/_kernels.pyx" in shipped and "kernels/_kernels.c" not in shipped
    assert {"LICENSE", "mkdocs.yml", "tests/naive.py", "tests/site_cases.py"} <= shipped
    assert not any("__pycache__" in f or f.endswith((".so", ".pyc")) for f in shipped)


def test_metadata_names_the_licence_file_and_the_docs_extra():
    try:
        import tomllib
    except ImportError:                 # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "BSD-3-Clause" and project["license-files"] == ["LICENSE"]
    assert "BSD 3-Clause License" in (ROOT / "LICENSE").read_text()
    assert any(c.startswith("Programming Language :: Python :: 3.1")
               for c in project["classifiers"])
    assert {d.split(">")[0] for d in project["optional-dependencies"]["docs"]} == \
        {"mkdocs", "mkdocs-material"}
