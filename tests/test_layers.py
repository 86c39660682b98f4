"""The package's architecture, enforced: layers import only downwards (the contracts
in pyproject.toml), no module imports itself through others, and the public face
loads no compiled engine."""
import pathlib
import subprocess
import sys

import grimp
import pytest
from importlinter import cli as importlinter_cli

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_layer_contracts_are_kept():
    assert importlinter_cli.lint_imports(config_filename=str(ROOT / "pyproject.toml")) == 0


def _cycle(graph, skip=frozenset()):
    """One import cycle among the graph's modules except ``skip``, or None (depth-first
    search)."""
    state, stack = dict.fromkeys(skip, "done"), []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph.find_modules_directly_imported_by(m)):
            if state.get(n) == "open":
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = "done"
        return None

    for m in sorted(graph.modules):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles():
    graph = grimp.build_graph("fastsched", cache_dir=None)
    # a package's __init__ that re-exports its modules is not a cycle of concepts
    packages = {m for m in graph.modules if graph.find_children(m)}
    assert _cycle(graph, skip=packages) is None


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a")):
        graph.add_import(importer=a, imported=b)
    assert _cycle(graph) == ["p.a", "p.b", "p.c", "p.a"]


def _loads_numba(code: str) -> bool:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\n"
                          "print('numba' in sys.modules)"], capture_output=True, text=True,
                         check=True).stdout.split()
    return out[-1] == "True"


def test_import_and_help_load_no_numba():
    assert not _loads_numba("import fastsched\nfastsched.Cluster, fastsched.read_swf")
    assert not _loads_numba("from fastsched.cli import main\n"
                            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass")
    assert not _loads_numba("import fastsched\nfastsched.simulate")   # (engines load lazily)
    assert _loads_numba("import fastsched\nfastsched.Scheduler")    # the control


def test_fastsched_verify_stays_the_function_when_its_package_is_imported():
    out = subprocess.run([sys.executable, "-c", "import fastsched.verify.frames\n"
                          "import fastsched as fs\nprint(type(fs.verify).__name__, fs.verify.__module__)"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["function", "fastsched.verify"]


#: what ``fastsched --help`` and ``import fastsched`` must not load: NumPy and the
#: libraries that come with it (a check on sys.modules, not on time)
HEAVY = ("numpy", "pandas", "numba", "llvmlite", "scipy", "matplotlib", "pyarrow", "tqdm",
         "cloudpickle", "fastsched.engine", "fastsched.verify")


def _loaded(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\n"
                          f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return out[-1].split() if out else []


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_top_level_help_loads_nothing_heavy(argv):
    assert _loaded("import contextlib, io\nfrom fastsched.cli import main\n"
                   "with contextlib.redirect_stdout(io.StringIO()):\n"
                   f"    try:\n        main({argv!r})\n    except SystemExit:\n        pass") == []


def test_import_fastsched_loads_nothing_heavy():
    assert _loaded("import fastsched") == []
    assert "numpy" in _loaded("import fastsched\nfastsched.verify")     # the control
