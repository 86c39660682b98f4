"""Kernels compiled without Numba's reference counting (``_nrt=False``).

Such a kernel skips the atomic increments and decrements of array reference
counts (fastsched.engine.runindex says why it matters), so it must not return an
array: the caller would take a reference the kernel never made, and free the
array while its owner still uses it. Numba itself refuses allocation there, not
a returned argument; this checks every compiled signature of every such kernel, as Numba's
cache holds them.
"""
import importlib

import numba
from numba import njit, types

from fastsched._jitcache import KERNEL_SOURCES


def _has_array(ty) -> bool:
    if isinstance(ty, types.Array):
        return True
    if isinstance(ty, types.BaseTuple):
        return any(_has_array(t) for t in ty.types)
    return False


def _leaf_kernels():
    """(name, dispatcher) of every package kernel that sets ``_nrt=False``."""
    out = []
    for mod in KERNEL_SOURCES:
        m = importlib.import_module("fastsched." + mod.replace("/", "."))
        for name, obj in vars(m).items():
            if (isinstance(obj, numba.core.registry.CPUDispatcher)
                    and obj.__module__ == m.__name__
                    and obj.targetoptions.get("_nrt") is False):
                out.append((f"{mod.split('/')[-1]}.{name}", obj))
    return out


def _array_returning(signatures):
    """(name, signature) of each of ``signatures`` ((name, [signature]) pairs) that
    returns an array."""
    return [(name, str(sig)) for name, sigs in signatures for sig in sigs
            if _has_array(sig.return_type)]


def _compiled_signatures(kernels):
    """(name, [signature]) of each kernel: those compiled in this process and every one
    Numba's cache holds for it, whichever process compiled it. A kernel loaded from the
    cache brings its callees' code along without loading them, so their dispatchers list
    no signature of their own; their cache entries still say what each was compiled for."""
    out = []
    for name, d in kernels:
        index = d._cache._cache_file._load_index()
        cached = [d._cache.load_overload(key[0], d.targetctx) for key in index]
        out.append((name, list(d.nopython_signatures)
                    + [r.signature for r in cached if r is not None]))
    return out


def test_leaf_kernels_return_no_array(monkeypatch):
    """Every signature a deep indexed pass compiles, and any other the cache holds."""
    from fastsched.bench.state import busy_state, run_pass
    from fastsched.engine import plan
    monkeypatch.setattr(plan, "_INDEX_AFTER_PASS", 0)
    d = run_pass(busy_state("ai-8k", pending=400, seed=5), "conservative", full=True)
    assert (d.outcome == 1).sum() > 50          # reservations: holds updated the index
    signatures = _compiled_signatures(_leaf_kernels())
    compiled = {name for name, sigs in signatures if sigs}
    # (profile._split and _take are inlined into _hold_nodes: no signature of their own)
    for hot in ("runindex.ix_hold", "treap.tr_succ", "passes._hold_nodes",
                "earliest._plan_indexed"):
        assert hot in compiled, hot
    assert len(compiled) >= 20
    assert _array_returning(signatures) == []


def test_the_check_sees_a_returned_array():
    """The check above can fail: a leaf kernel handing back its argument."""
    @njit(_nrt=False)
    def hands_back(a):
        a[0] = 1
        return a

    @njit(_nrt=False)
    def hands_back_pair(a):
        return a.shape[0], a

    @njit(_nrt=False)
    def counts(a):
        return a.shape[0]

    for k in (hands_back, hands_back_pair, counts):     # compiled, never run: running
        k.compile((types.int64[::1],))                  # the first two would free x
    bad = _array_returning([(name, k.nopython_signatures) for name, k in (
        ("hands_back", hands_back), ("hands_back_pair", hands_back_pair), ("counts", counts))])
    assert [name for name, _ in bad] == ["hands_back", "hands_back_pair"]


def test_every_kernel_without_reference_counting_is_declared_a_leaf_kernel():
    """``_nrt=False`` is spelled once, in fastsched.engine.leafkernel, whose docstring
    says why such a kernel is safe; every other one goes through leaf_kernel."""
    import pathlib
    import fastsched
    package = pathlib.Path(fastsched.__file__).parent
    spelled = sorted(p.name for p in package.rglob("*.py")
                     if "_nrt=False" in p.read_text().replace("``_nrt=False``", ""))
    assert spelled == ["leafkernel.py"]
    leaves = [name for name, _ in _leaf_kernels()]
    engine = {m.split("/")[1] for m in KERNEL_SOURCES if m.startswith("engine/")}
    assert len(leaves) >= 60 and all(name.split(".")[0] in engine for name in leaves)
