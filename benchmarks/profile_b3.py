"""Where a B3 pass spends its time: an instrumented copy of the node engine.

Copies ``src/fastsched`` to a temporary directory, inserts cycle counters
(``llvm.readcyclecounter``, ~20 ns each) into the engine's pass
(``engine/passes.py``, ``engine/earliest.py``) by text patches, builds the B3
state once (cached in /tmp) and runs one pass with counters. A development tool: if a patch no longer applies it says which.

    PYTHONPATH=$PWD/src python benchmarks/profile_b3.py [--cluster ai-100k] [--pending 100000]
"""
import argparse
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src", "fastsched")

RDTSC = '''
from numba.extending import intrinsic as _intrinsic
from numba.core import types as _types, cgutils as _cgutils
from llvmlite import ir as _ir


@_intrinsic
def _rdtsc(typingctx):
    def codegen(context, builder, signature, args):
        fnty = _ir.FunctionType(_ir.IntType(64), [])
        fn = _cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])
    return _types.int64(), codegen
'''

# per engine file, (old text, new text): each old text must occur exactly once in it
PATCHES = {
    "passes.py": [
        ("def _pass(now, queue, qlen, rules, jobs, types, nodes, free, p, run, lim, topo, out, scratch,\n"
         "          ctl):",
         "def _pass(now, queue, qlen, rules, jobs, types, nodes, free, p, run, lim, topo, out, scratch,\n"
         "          ctl, prof):"),
        ("    for q in range(last + 1):\n        if ctl[_REQUEST] == _STOP:\n",
         "    prof[20] = _rdtsc()\n    for q in range(last + 1):\n        if ctl[_REQUEST] == _STOP:\n"),
        ("                te = _plan_indexed(now, jobs.limit[j], jobs.nn[j], only_now, ix.top[0],\n"
         "                                   ix.slot[ty], ix.TR, p, scratch.trial)\n",
         "                c0 = _rdtsc()\n"
         "                te = _plan_indexed(now, jobs.limit[j], jobs.nn[j], only_now, ix.top[0],\n"
         "                                   ix.slot[ty], ix.TR, p, scratch.trial, prof)\n"
         "                k_ = 0 if jobs.nn[j] == 1 else 2\n"
         "                prof[k_] += _rdtsc() - c0\n                prof[k_ + 1] += 1\n"),
        ("                te = _plan_scan(e, j, now, only_now, now_here, ml, jobs, nodes, p, topo,\n"
         "                                scratch.trial)\n",
         "                c0 = _rdtsc()\n"
         "                te = _plan_scan(e, j, now, only_now, now_here, ml, jobs, nodes, p, topo,\n"
         "                                scratch.trial)\n"
         "                k_ = 4 if jobs.nn[j] == 1 else 6\n"
         "                prof[k_] += _rdtsc() - c0\n                prof[k_ + 1] += 1\n"),
        ("                ix = _add_slot(ty, q, last, now, queue, jobs, types, nodes, p,\n"
         "                               _nodes_of(jobs.pc_part[e], nodes), ix)\n",
         "                c0 = _rdtsc()\n"
         "                ix = _add_slot(ty, q, last, now, queue, jobs, types, nodes, p,\n"
         "                               _nodes_of(jobs.pc_part[e], nodes), ix)\n"
         "                prof[8] += _rdtsc() - c0\n                prof[9] += 1\n"),
        ("                    chosen)\n", "                    chosen, prof)\n"),
        ("def _hold_nodes(ask, t, held_end, p, ix, chosen):",
         "def _hold_nodes(ask, t, held_end, p, ix, chosen, prof):"),
        ("        ka = _split(x, t, p)\n",
         "        c1 = _rdtsc()\n        prof[11] += 1\n        ka = _split(x, t, p)\n"),
        ("        _take(x, ka, kb, ask.g, ask.c, ask.m, p)\n",
         "        c2 = _rdtsc()\n        prof[12] += c2 - c1\n"
         "        _take(x, ka, kb, ask.g, ask.c, ask.m, p)\n"
         "        c3 = _rdtsc()\n        prof[10] += c3 - c2\n"),
        ("                                ix.last, ix.ids, ix.ibuf)\n",
         "                                ix.last, ix.ids, ix.ibuf)\n"
         "            prof[13] += 1\n        prof[14] += _rdtsc() - c3\n"),
        ("    if rules.keep:      # the next pass starts from the running jobs\n"
         "        _undo_reservations(resv, reserved, rules, jobs, out, p)\n",
         "    c9 = _rdtsc()\n    prof[16] += c9 - prof[20]\n"
         "    if rules.keep:      # the next pass starts from the running jobs\n"
         "        _undo_reservations(resv, reserved, rules, jobs, out, p)\n"
         "    prof[17] += _rdtsc() - c9\n"),
        ("from .state import Ask, Index\n",
         "from .state import Ask, Index\n" + RDTSC + "\n_PROF = np.zeros(32, dtype=np.int64)\n"),
    ],
    "earliest.py": [
        ("def _plan_indexed(now, d, need, only_now, root, q, TR, p, chosen):",
         "def _plan_indexed(now, d, need, only_now, root, q, TR, p, chosen, prof):"),
        ("    return _plan_multi(z, now, d, need, only_now, root, q, TR, p, chosen)\n",
         "    return _plan_multi(z, now, d, need, only_now, root, q, TR, p, chosen, prof)\n"),
        ("def _plan_multi(z, now, d, need, only_now, root, q, TR, p, chosen):",
         "def _plan_multi(z, now, d, need, only_now, root, q, TR, p, chosen, prof):"),
        ("            hs = _heap_push(hk, hv, hs, b, z)\n",
         "            hs = _heap_push(hk, hv, hs, b, z)\n            prof[18] += 1\n"),
    ],
    "plan.py": [
        ("from .passes import FCFS, _pass\n", "from .passes import FCFS, _PROF, _pass\n"),
        ("out, new_scratch(jobs.nn), control,\n                    control=control)[0]",
         "out, new_scratch(jobs.nn), control, _PROF,\n                    control=control)[0]"),
    ],
    "loop.py": [
        ("                                     run, lim, topo, out, scratch, ctl)\n",
         "                                     run, lim, topo, out, scratch, ctl,\n"
         "                                     np.zeros(32, dtype=np.int64))\n"),
    ],
}


def patch(text: str, patches) -> str:
    for old, new in patches:
        n = text.count(old)
        if n != 1:
            raise SystemExit(f"profile_b3: patch anchor found {n} times: {old[:70]!r}")
        text = text.replace(old, new)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cluster", default="ai-100k")
    ap.add_argument("--pending", type=int, default=100_000)
    ap.add_argument("--policy", default="conservative")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="b3prof")
    pkg = os.path.join(tmp, "fastsched")
    shutil.copytree(SRC, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for name, patches in PATCHES.items():
        path = os.path.join(pkg, "engine", name)
        text = patch(open(path).read(), patches)
        open(path, "w").write(text)
    env = dict(os.environ, PYTHONPATH=tmp, NUMBA_CACHE_DIR=os.path.join(tmp, "cache"))
    code = RUNNER.format(cluster=args.cluster, pending=args.pending, policy=args.policy)
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    shutil.rmtree(tmp)


RUNNER = r'''
import os, pickle, time
import numpy as np
import fastsched
from fastsched.engine import passes as nodeplan
from fastsched.bench.state import busy_state, run_pass
p = "/tmp/b3state-{cluster}-{pending}.pkl"
if os.path.exists(p):
    state = pickle.load(open(p, "rb"))
else:
    state = busy_state("{cluster}", pending={pending})
    pickle.dump(state, open(p, "wb"))
full = "{policy}" == "conservative"
run_pass(state, "{policy}", full)
nodeplan._PROF[:] = 0
t = time.perf_counter()
d = run_pass(state, "{policy}", full)
wall = time.perf_counter() - t
P = nodeplan._PROF.copy()
import numba
@numba.njit
def _cyc():
    return nodeplan._rdtsc()
a = _cyc(); t = time.perf_counter()
while time.perf_counter() - t < 0.2:
    pass
hz = (_cyc() - a) / (time.perf_counter() - t)       # cycle counter ticks per second
ms = lambda c: 1000.0 * c / hz
print(f"pass wall {{wall*1000:.0f}} ms, pass loop {{ms(P[16]):.0f}} ms, outcomes {{np.bincount(d.outcome, minlength=3)}}")
for name, k in (("indexed plan need=1", 0), ("indexed plan multi", 2), ("scan plan need=1", 4),
                ("scan plan multi", 6), ("index builds", 8)):
    print(f"  {{name:22s}} {{ms(P[k]):8.1f}} ms  calls {{P[k+1]:8d}}")
print(f"  runs pushed in indexed multi-node sweeps {{P[18]}}")
print(f"  holds (node x job)     {{P[11]}}; index updates (node x hold) {{P[13]}}")
print(f"  splits, slots touched  {{ms(P[12]):8.1f}} ms")
print(f"  _take                  {{ms(P[10]):8.1f}} ms")
print(f"  index update           {{ms(P[14]):8.1f}} ms")
rest = P[16] - sum(P[k] for k in (0, 2, 4, 6, 8, 10, 12, 14))
print(f"  rest of the loop       {{ms(rest):8.1f}} ms")
print(f"  undo of the reservations {{ms(P[17]):8.1f}} ms")
print(f"  outside the loop and the undo (plan_nodes set-up, pre-scan) {{wall*1000 - ms(P[16]) - ms(P[17]):.0f}} ms")
'''

if __name__ == "__main__":
    main()
