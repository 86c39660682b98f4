import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import naive
from fastsched.model.errors import InputError
from fastsched.io.hostlist import compress, compress_rows, compress_runs, expand
from fastsched.model.noderuns import NodeRuns
from fastsched.sim.results import gpu_id_rows


def test_expand_basic():
    assert expand("node[001-003,010],gpu7") == ["node001", "node002", "node003", "node010", "gpu7"]


def test_expand_width_from_low_bound():
    assert expand("n[8-10]") == ["n8", "n9", "n10"]
    assert expand("n[001-010]")[0] == "n001"
    assert expand("n[001-010]")[-1] == "n010"
    assert len(expand("n[001-010]")) == 10


def test_expand_cartesian_product_and_suffix():
    assert expand("a[1-2]b[3-4]") == ["a1b3", "a1b4", "a2b3", "a2b4"]
    assert expand("rack[1-2]-ib") == ["rack1-ib", "rack2-ib"]


def test_expand_plain_names_and_empty():
    assert expand("login") == ["login"]
    assert expand("a,b , c") == ["a", "b", "c"]
    assert expand("") == []


@pytest.mark.parametrize("bad", ["a[1-2", "a]1", "a[3-1]", "a[x]", "a[1-y]", "a[]", "a[[1]]", "a[-1]"])
def test_expand_errors(bad):
    with pytest.raises(InputError) as ei:
        expand(bad)
    assert bad in str(ei.value)


def test_compress_basic():
    assert compress(["node001", "node002", "node003", "node010"]) == "node[001-003,010]"
    assert compress(["node010", "node003", "node001", "node002", "node001"]) == "node[001-003,010]"


def test_compress_lone_name_stays_bare():
    assert compress(["node001"]) == "node001"
    assert compress(["login"]) == "login"
    assert compress([]) == ""


def test_compress_widths_are_separate_groups():
    assert compress(["node9", "node010", "node011"]) == "node9,node[010-011]"
    # unpadded numbers of different lengths belong together, like Slurm's [8-10]
    assert compress(["n10", "n8", "n9"]) == "n[8-10]"


def test_compress_group_order_is_first_appearance():
    assert compress(["gpu2", "cpu1", "gpu1", "cpu3", "login"]) == "gpu[1-2],cpu[1,3],login"


def test_compress_rejects_bad_names():
    with pytest.raises(InputError):
        compress(["a,b"])
    with pytest.raises(InputError):
        compress(["a[1]"])


@pytest.mark.parametrize("s", ["node[001-003,010],gpu7", "n[8-10]", "a[1-3,5,7-9],b01",
                               "node[098-100]", "x", "c[0-1]"])
def test_canonical_roundtrip(s):
    assert compress(expand(s)) == s


names_strategy = st.lists(
    st.tuples(st.sampled_from(["node", "gpu", "r1n", "x-"]),
              st.integers(min_value=0, max_value=1200),
              st.sampled_from([0, 1, 3, 4]))
    .map(lambda t: f"{t[0]}{t[1]:0{t[2]}d}" if t[2] else f"{t[0]}{t[1]}"),
    max_size=60,
) | st.lists(st.sampled_from(["login", "gpu", "node007", "node7", "node07"]), max_size=8)


@settings(max_examples=126, deadline=None)
@given(names_strategy)
def test_roundtrip_property(names):
    c = compress(names)
    assert sorted(set(expand(c))) == sorted(set(names))
    # the compressed form is canonical: compressing its expansion gives it back
    assert compress(expand(c)) == c


# --------------------------------------------------------------------------- all rows at once

cluster_names = st.lists(
    st.tuples(st.sampled_from(["node", "gpu", "n", "r1n", ""]),
              st.integers(min_value=0, max_value=120),
              st.sampled_from([0, 2, 3]))
    .map(lambda t: (f"{t[0]}{t[1]:0{t[2]}d}" if t[2] else f"{t[0]}{t[1]}") if t[0] or t[1]
         else "login"),
    min_size=1, max_size=40)


numbered_names = st.tuples(st.integers(0, 120), st.integers(1, 40), st.sampled_from([0, 2, 3])).map(
    lambda t: [f"n{i:0{t[2]}d}" if t[2] else f"n{i}" for i in range(t[0], t[0] + t[1])])


@st.composite
def allocations(draw):
    """Node names (random, or numbered in index order as in a cluster) and rows of node
    indices (any order with repeats, or ranges of indices as whole-node jobs get) in CSR
    form."""
    names = draw(cluster_names | numbered_names)
    n = len(names)
    index_range = st.tuples(st.integers(0, n - 1), st.integers(1, n)).map(
        lambda t: list(range(t[0], min(n, t[0] + t[1]))))
    rows = draw(st.lists(st.lists(st.integers(0, n - 1), max_size=12) | index_range,
                         max_size=8))
    offsets = np.cumsum([0] + [len(r) for r in rows])
    return names, offsets, np.array([k for r in rows for k in r], dtype=np.int64)


@settings(max_examples=126, deadline=None)
@given(allocations())
def test_compress_rows_equals_compress_row_by_row(case):
    names, offsets, nodes = case
    assert compress_rows(names, offsets, nodes).tolist() == naive.hostlists(names, offsets, nodes)


def test_compress_rows_hand_worked():
    names = ["n01", "n9", "n10", "n11", "login", "n02", "x007"]
    offsets = [0, 3, 3, 7, 9]
    nodes = [2, 1, 3,   5, 4, 0, 4,   6, 6]
    # row 0: no padded 2-digit name, so n10-n11 share n9's unpadded group;
    # row 2: n01/n02 are padded to 2 digits, and then n10 would join them
    assert compress_rows(names, offsets, nodes).tolist() == [
        "n[9-11]", "", "n[01-02],login", "x007"]
    assert compress_rows(names, [0, 2], [0, 2]).tolist() == ["n[01,10]"]


def test_compress_rows_long_numbers_and_bad_names():
    names = ["a" + "1" * 20, "a" + "1" * 19 + "2", "b[1]"]
    assert compress_rows(names, [0, 2], [0, 1]).tolist() == [compress(names[:2])]
    with pytest.raises(InputError, match="bad host name"):
        compress_rows(names, [0, 1], [2])
    assert compress_rows(names, [0, 0, 0], []).tolist() == ["", ""]


@settings(max_examples=42, deadline=None)
@given(case=allocations(), data=st.data())
def test_gpu_id_rows_equals_format_gpu_ids(case, data):
    names, offsets, nodes = case
    masks = np.array(data.draw(st.lists(st.integers(0, 2**64 - 1), min_size=len(nodes),
                                        max_size=len(nodes))), dtype=np.uint64)
    masks[::3] = 0                                     # nodes without GPUs are left out
    assert gpu_id_rows(names, offsets, nodes, masks).tolist() == \
        naive.gpu_id_lists(names, offsets, nodes, masks)
    assert gpu_id_rows(names, offsets, nodes, None).tolist() == [""] * (len(offsets) - 1)


@st.composite
def run_rows(draw):
    """Node names as :func:`allocations` draws them and rows of runs of consecutive
    indices (``first``, ``count``): ascending and apart as the counts model keeps them,
    or in any order, touching, overlapping or empty."""
    names = draw(cluster_names | numbered_names)
    n = len(names)
    run = st.integers(0, n - 1).flatmap(lambda f: st.tuples(st.just(f), st.integers(0, n - f)))
    rows = draw(st.lists(st.lists(run, max_size=5), max_size=8))
    offsets = np.cumsum([0] + [len(r) for r in rows])
    first = np.array([f for r in rows for f, _ in r], dtype=np.int64)
    count = np.array([c for r in rows for _, c in r], dtype=np.int64)
    return names, NodeRuns(offsets=offsets, first=first, count=count)


@settings(max_examples=126, deadline=None)
@given(run_rows())
def test_compress_runs_equals_compress_row_by_row(case):
    names, runs = case
    offsets, nodes = runs.node_offsets(), runs.nodes()
    assert nodes.tolist() == [x for f, c in zip(runs.first.tolist(), runs.count.tolist())
                              for x in range(f, f + c)]
    assert compress_runs(names, runs).tolist() == naive.hostlists(names, offsets, nodes)


def test_compress_runs_hand_worked():
    names = [f"node{k:04d}" for k in range(1, 11)] + ["gpu1", "gpu2"]
    runs = NodeRuns(offsets=np.array([0, 2, 2, 4]), first=np.array([0, 5, 9, 11]),
                    count=np.array([3, 2, 2, 1]))
    assert compress_runs(names, runs).tolist() == ["node[0001-0003,0006-0007]", "",
                                                   "node0010,gpu[1-2]"]
