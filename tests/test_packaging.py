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
