"""Numba's on-disk cache, made to notice changes in *other* modules.

Numba keys a cached kernel on its own source file only. A kernel that calls a
kernel of another module (``engine.passes._pass`` inlines ``engine.runindex.ix_hold``) or
reads another module's constants keeps its stale machine code when only that
other file changes, as after a ``git pull`` into an editable install: the
engine would silently run old code. Here every kernel of the package is keyed
on the files that compiled code can reach: the modules holding kernels and the
package modules they import (``KERNEL_SOURCES``; tests/test_jitcache.py checks
the list against the imports). Changing any of them recompiles on next use.
So does switching Numba's bounds checking (``NUMBA_BOUNDSCHECK``), which Numba
leaves out of its own key: a checked run must never load unchecked code.

The stamp is added by a cache locator placed ahead of Numba's own; it answers
only for the files of this package and its subpackages, and otherwise defers to
Numba, so other libraries' caches behave as before.
"""
from __future__ import annotations

import os

#: modules with compiled code, then the package modules they import
KERNEL_SOURCES = ("engine/availability", "engine/blocks", "engine/earliest", "engine/freenow", "engine/heap",
                  "engine/images", "engine/limits", "engine/loop", "engine/memo", "engine/passes",
                  "engine/placement",
                  "engine/power", "engine/preemptplan",
                  "engine/prefetch", "engine/profile", "engine/runindex", "engine/running",
                  "engine/slurmplan", "engine/timemin", "engine/treap", "engine/undo", "engine/wholenode",
                  "policy/fairshare", "policy/priority", "sim/gpusweep", "tools/rlfast",
                  "engine/driver", "engine/elastic", "engine/entry", "engine/inputs", "engine/requeue",
                  "engine/interrupt", "engine/leafkernel", "engine/state", "model/cluster",
                  "model/constraints", "model/elastic", "model/errors", "model/events",
                  "model/jobs", "model/noderuns", "model/policies", "model/progress",
                  "model/reservations",
                  "model/settings", "model/topology", "model/validation",
                  "tools/rlsim")


def sources_stamp(package_dir: str, modules) -> tuple:
    """(file, mtime_ns, size) of each module: what Numba itself checks, per file."""
    out = []
    for m in modules:
        st = os.stat(os.path.join(package_dir, *m.split("/")) + ".py")
        out.append((f"{m}.py", st.st_mtime_ns, st.st_size))
    return tuple(out)


def install(package_dir: str, modules=KERNEL_SOURCES) -> bool:
    """Key the cached kernels of files in ``package_dir`` (or below) on ``modules`` too.

    Returns False (and changes nothing) when this Numba has no locator list to
    extend; the package then works as before, with Numba's per-file keys."""
    try:
        from numba.core.caching import CacheImpl, _CacheLocator
    except ImportError:
        return False
    locators = getattr(CacheImpl, "_locator_classes", None)
    if not isinstance(locators, list):
        return False
    package_dir = os.path.realpath(package_dir)

    class PackageStampLocator(_CacheLocator):
        """Numba's own locator for the file, with the package's stamp added."""

        def __init__(self, inner):
            self._inner = inner

        @classmethod
        def from_function(cls, py_func, py_file):
            if not os.path.realpath(py_file).startswith(package_dir + os.sep):
                return None
            for other in locators:
                if other is not cls:
                    inner = other.from_function(py_func, py_file)
                    if inner is not None:
                        return cls(inner)
            return None

        def ensure_cache_path(self):
            self._inner.ensure_cache_path()

        def get_cache_path(self):
            return self._inner.get_cache_path()

        def get_disambiguator(self):
            return self._inner.get_disambiguator()

        def get_source_stamp(self):
            from numba.core import config
            return (self._inner.get_source_stamp(), sources_stamp(package_dir, modules),
                    ("boundscheck", config.BOUNDSCHECK))

    locators[:] = [c for c in locators if getattr(c, "package_dir", None) != package_dir]
    PackageStampLocator.package_dir = package_dir
    locators.insert(0, PackageStampLocator)
    return True


install(os.path.dirname(os.path.abspath(__file__)))
