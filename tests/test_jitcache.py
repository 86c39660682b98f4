"""fastsched._jitcache: a cached kernel is recompiled when a module it reaches changes.

Numba keys its cache on the kernel's own file only; the package adds the files
its compiled code can reach. The end-to-end test builds a two-module package
(a cached caller in b.py, its callee in a.py), edits only a.py, and checks that
the caller sees the edit with the guard and (the control) does not without.
"""
import ast
import os
import pathlib
import subprocess
import sys
import textwrap

import fastsched
from fastsched import _jitcache
from fastsched.engine.passes import _pass

PKG = pathlib.Path(fastsched.__file__).parent


def _package_imports(name, files):
    """The package modules ``name`` ("engine/placement") imports, as such names."""
    here = name.split("/")[:-1]
    tree = ast.parse(files[name].read_text())
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level and n.module:
            target = "/".join(here[:len(here) - (n.level - 1)] + n.module.split("."))
            for candidate in (target, f"{target}/__init__"):
                if candidate in files:
                    yield candidate


def test_kernel_sources_are_the_kernels_and_what_they_import():
    files = {p.relative_to(PKG).with_suffix("").as_posix(): p for p in PKG.rglob("*.py")}
    todo = [m for m, p in files.items()
            if any(mark in p.read_text() for mark in ("@njit", "@intrinsic", "@leaf_kernel"))]
    assert {"engine/passes", "engine/runindex", "engine/treap", "engine/prefetch",
            "engine/placement"} <= set(todo)
    reach = set()
    while todo:
        m = todo.pop()
        if m not in reach:
            reach.add(m)
            todo += list(_package_imports(m, files))
    assert reach == set(_jitcache.KERNEL_SOURCES)


def test_package_kernels_carry_the_package_stamp():
    stamp = _pass._cache._impl.locator.get_source_stamp()
    names = [entry[0] for entry in stamp[1]]
    assert names == [f"{m}.py" for m in _jitcache.KERNEL_SOURCES]


CALLER = """
from numba import njit
from .a import f

@njit(cache=True)
def g():
    return f() * 10
"""
RUN = """
import sys
sys.path.insert(0, {root!r})
from fastsched._jitcache import install
assert install({guarded!r}, ("a", "b"))
from guarded.b import g as guarded
from plain.b import g as plain
print(guarded(), plain())
"""


def _run(root):
    """(guarded g(), plain g()) in a new process: the package "guarded" has the cache
    guard installed, "plain" (the control) has Numba's own cache only."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(root / "cache"))
    code = RUN.format(root=str(root), guarded=str(root / "guarded"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return tuple(int(x) for x in out.stdout.split()[-2:])


def _edit_callee(package, value):
    a = package / "a.py"
    a.write_text(f"from numba import njit\n\n@njit\ndef f():\n    return {value}\n")
    st = os.stat(a)
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))   # a visibly newer file


def _package(package):
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "b.py").write_text(textwrap.dedent(CALLER))
    _edit_callee(package, 1)


def test_editing_a_callee_recompiles_its_cached_caller(tmp_path):
    for name in ("guarded", "plain"):
        _package(tmp_path / name)
    assert _run(tmp_path) == (10, 10)
    assert len(list((tmp_path / "cache").rglob("b.g-*.nbi"))) == 2     # cached ...
    assert _run(tmp_path) == (10, 10)                                  # ... and read back
    for name in ("guarded", "plain"):
        _edit_callee(tmp_path / name, 2)
    # without the guard Numba reuses the stale caller (the control: why the guard exists)
    assert _run(tmp_path) == (20, 10)
