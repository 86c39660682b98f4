"""Topology placement (fastsched.engine.placement) against its twin (tests/naive_topology.py).

Hypothesis: identical nodes / GPU masks on random small trees, block topologies,
candidate sets and GPU groups; the greedy fill spans the brute-force minimum of
groups. Hand-checked placements; gres.conf and block topology.conf parsing,
including malformed lines.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive_topology as naive
from fastsched import InputError
from fastsched.tools.generate import ai_cluster
from fastsched.engine.placement import (choose_gpus, choose_gpus_kernel, place_block, place_tree,
                                        topo_place)
from fastsched.io.gresconf import parse_gres_conf, read_gres_conf
from fastsched.io.topology import read_block_topology
from fastsched.model.topology import BlockTopology, levels_array
from fastsched.sim.placement import placement_quality, placement_summary

SETTINGS = settings(max_examples=180, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- strategies

@st.composite
def trees(draw):
    """(levels as lists, candidates in preference order): 1-30 nodes, 1-3 levels."""
    n = draw(st.integers(1, 30))
    nleaf = draw(st.integers(1, 8))
    leaf = draw(st.lists(st.integers(-1, nleaf - 1), min_size=n, max_size=n))
    levels = [leaf]
    width = nleaf
    for _ in range(draw(st.integers(0, 2))):
        up = draw(st.integers(1, max(1, width)))
        parent = draw(st.lists(st.integers(0, up - 1), min_size=width, max_size=width))
        below = levels[-1]
        levels.append([parent[b] if b >= 0 else -1 for b in below])
        width = up
    cand = draw(st.permutations(range(n)))
    cand = cand[:draw(st.integers(0, n))]
    return levels, list(cand)


@st.composite
def blocks(draw):
    nblocks = draw(st.integers(1, 6))
    base = draw(st.integers(1, 4))
    per = draw(st.lists(st.integers(base, base + 3), min_size=nblocks, max_size=nblocks))
    ids = [b for b, k in enumerate(per) for _ in range(k)]
    ids += [-1] * draw(st.integers(0, 2))
    nlev = draw(st.integers(0, 3))
    sizes = [base * 2 ** i for i in range(nlev + 1)]
    cand = draw(st.permutations(range(len(ids))))
    cand = cand[:draw(st.integers(0, len(ids)))]
    return ids, sizes, list(cand)


def _arr(levels):
    return np.array(levels, dtype=np.int32)


# --------------------------------------------------------------------------- tree

@SETTINGS
@given(trees(), st.integers(1, 12), st.integers(1, 3), st.integers(0, 4))
def test_topo_place_matches_naive(tree, k, unit, max_leaves):
    levels, cand = tree
    need = k * unit
    fast = topo_place(np.array(cand, dtype=np.int64), _arr(levels), need, unit, max_leaves)
    slow = naive.topo_place(cand, levels, need, unit, max_leaves)
    assert fast.tolist() == slow
    if slow:
        leaves = [levels[0][v] for v in slow]
        assert len(slow) == need and len(set(slow)) == need and set(slow) <= set(cand)
        assert all(leaves.count(leaf) % unit == 0 for leaf in set(leaves))
        if max_leaves:
            assert len(set(leaves)) <= max_leaves


@SETTINGS
@given(trees(), st.integers(1, 12), st.integers(0, 3))
def test_tree_spans_fewest_leaves_of_chosen_switch(tree, need, max_leaves):
    """Inside its switch the job spans the brute-force minimum of leaf switches, and
    no single leaf switch that could hold the job alone was passed over."""
    levels, cand = tree
    got = naive.topo_place(cand, levels, need, 1, max_leaves)
    valid = [c for c in cand if levels[0][c] >= 0]
    counts = {}
    for c in valid:
        counts[levels[0][c]] = counts.get(levels[0][c], 0) + 1
    if not got:
        best = naive.min_groups(list(counts.values()), need)
        assert best is None or (max_leaves and best > max_leaves)
        return
    # the group the job was placed in: the lowest level where all chosen share one id
    for lv in range(len(levels) + 1):
        ids = {0} if lv == len(levels) else {levels[lv][v] for v in got}
        if len(ids) == 1:
            break
    inside = [c for c in valid
              if lv == len(levels) or levels[lv][c] == levels[lv][got[0]]]
    caps = {}
    for c in inside:
        caps[levels[0][c]] = caps.get(levels[0][c], 0) + 1
    assert len({levels[0][v] for v in got}) == naive.min_groups(list(caps.values()), need)
    if max(counts.values(), default=0) >= need:
        assert lv == 0


def test_tree_hand_checked():
    # leaves: {0,1} {2,3} {4,5,6} {7}; spines: {0..3} {4..7}
    lv = np.array([[0, 0, 1, 1, 2, 2, 2, 3], [0, 0, 0, 0, 1, 1, 1, 1]], dtype=np.int32)
    everything = np.arange(8)
    assert place_tree(lv, everything, 2).tolist() == [0, 1]          # best-fit leaf 0
    assert place_tree(lv, everything, 3).tolist() == [4, 5, 6]       # only leaf 2 holds 3
    assert place_tree(lv, everything, 4).tolist() == [0, 1, 2, 3]    # best-fit spine 0
    # spine 1 has 4 free but over 2 leaves: largest leaf first, best fit for the rest
    cand = np.array([6, 4, 7, 0, 2])
    assert place_tree(lv, cand, 3).tolist() == [4, 6, 7]
    assert place_tree(lv, cand, 3, max_switches=1).tolist() == []
    assert place_tree(lv, cand, 5).tolist() == [0, 2, 4, 6, 7]       # root: everything
    assert place_tree(lv, cand, 6).tolist() == []
    # candidate order decides inside a leaf
    assert place_tree(lv, np.array([6, 5, 4]), 2).tolist() == [5, 6]


def test_tree_nodes_outside_switches_are_never_chosen():
    lv = np.array([[0, 0, -1, -1]], dtype=np.int32)
    assert place_tree(lv, np.arange(4), 2).tolist() == [0, 1]
    assert place_tree(lv, np.arange(4), 3).tolist() == []


def test_tree_on_ai_cluster_prefers_one_leaf_then_one_spine():
    c = ai_cluster("ai-8k")
    lv = levels_array(c.topology)
    free = np.arange(32 * 5, 32 * 25)           # leaves 5..24 wholly free
    got = place_tree(lv, free, 32)
    assert np.unique(c.topology["leaf"][got]).size == 1
    got = place_tree(c, free, 64, max_switches=2)
    assert np.unique(c.topology["leaf"][got]).size == 2
    assert np.unique(c.topology["spine"][got]).size == 1


def test_tree_bad_input():
    lv = np.array([[0, 0, 1, 1]], dtype=np.int32)
    with pytest.raises(InputError):
        place_tree(lv, [0, 9], 1)
    with pytest.raises(InputError):
        place_tree(lv, [0, 0], 1)
    with pytest.raises(InputError):
        place_tree(lv, [0, 1], 0)
    with pytest.raises(InputError):
        place_tree(lv, [0, 1], 1, max_switches=-1)
    with pytest.raises(InputError, match="does not nest"):
        levels_array({"leaf": np.array([0, 0, 1]), "spine": np.array([0, 1, 1])})
    with pytest.raises(InputError, match="every level"):
        levels_array({"leaf": np.array([0, -1]), "spine": np.array([0, 0])})


# --------------------------------------------------------------------------- block

@SETTINGS
@given(blocks(), st.integers(1, 8), st.integers(0, 2), st.booleans())
def test_block_matches_naive(blk, k, segment, exclusive):
    ids, sizes, cand = blk
    segment = min(segment, sizes[0])
    need = k * (segment or 1)
    bt = BlockTopology(np.array(ids), tuple(sizes))
    fast = place_block(bt, np.array(cand, dtype=np.int64), need, segment=segment,
                       exclusive_topo=exclusive)
    slow = naive.place_block(ids, sizes, cand, need, segment, exclusive)
    assert fast.tolist() == slow


def test_block_hand_checked():
    # 4 base blocks of 4 nodes; BlockSizes=4,8,16: pairs {0,1} {2,3}, then all
    ids = np.repeat(np.arange(4), 4)
    bt = BlockTopology(ids, (4, 8, 16))
    assert bt.levels[1].tolist() == [0] * 8 + [1] * 8
    busy = {0, 4, 5, 8}                   # free: block0 3, block1 2, block2 3, block3 4
    free = np.array([v for v in range(16) if v not in busy])
    assert place_block(bt, free, 2).tolist() == [6, 7]              # best-fit base block 1
    assert place_block(bt, free, 4).tolist() == [12, 13, 14, 15]
    assert place_block(bt, free, 5).tolist() == [1, 2, 3, 6, 7]     # pair 0 (5 free)
    # segments of 2: block0 holds 1 segment, block1 1, block2 1, block3 2
    assert place_block(bt, free, 6, segment=2).tolist() == [9, 10, 12, 13, 14, 15]
    # --exclusive=topo: only block 3 is wholly free
    assert place_block(bt, free, 4, exclusive_topo=True).tolist() == [12, 13, 14, 15]
    assert place_block(bt, free, 5, exclusive_topo=True).tolist() == []
    with pytest.raises(InputError, match="multiple"):
        place_block(bt, free, 5, segment=2)
    with pytest.raises(InputError, match="base block size"):
        place_block(bt, free, 8, segment=8)


def test_block_sizes_default_and_checks():
    bt = BlockTopology(np.repeat(np.arange(5), 3))
    assert bt.block_sizes == (3, 6, 12)
    with pytest.raises(InputError, match="power of two"):
        BlockTopology(np.repeat(np.arange(4), 4), (4, 12))
    with pytest.raises(InputError, match="fewer than"):
        BlockTopology(np.array([0, 0, 0, 1]), (2, 4))


def test_read_block_topology(tmp_path):
    names = [f"n{i}" for i in range(1, 9)]
    p = tmp_path / "topology.conf"
    p.write_text("# blocks\nBlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-8]\n"
                 "BlockSizes=4,8\n")
    bt = read_block_topology(p, names)
    assert bt.block_of_node.tolist() == [0] * 4 + [1] * 4 and bt.names == ["b1", "b2"]
    assert bt.block_sizes == (4, 8)
    p.write_text("BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[4-8]\n")
    with pytest.raises(InputError) as e:
        read_block_topology(p, names)
    assert e.value.file == str(p) and e.value.line == 2 and "two blocks" in str(e.value)
    p.write_text("BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,x\n")
    with pytest.raises(InputError) as e:
        read_block_topology(p, names)
    assert e.value.line == 2 and e.value.field == "BlockSizes"
    p.write_text("BlockName=b1 Nodes=zz1\n")
    with pytest.raises(InputError, match="unknown node"):
        read_block_topology(p, names)


# --------------------------------------------------------------------------- GPUs

@st.composite
def gpu_cases(draw):
    ngpu = draw(st.integers(1, 10))
    labels = draw(st.lists(st.integers(-1, 3), min_size=ngpu, max_size=ngpu))
    groups = {}
    for k, lab in enumerate(labels):
        if lab >= 0:
            groups[lab] = groups.get(lab, 0) | (1 << k)
    masks = draw(st.permutations(list(groups.values())))
    free = draw(st.integers(0, (1 << ngpu) - 1))
    g = draw(st.integers(0, ngpu))
    return free, g, list(masks)


@SETTINGS
@given(gpu_cases())
def test_choose_gpus_matches_naive_and_is_optimal(case):
    free, g, masks = case
    fast = int(choose_gpus_kernel(np.uint64(free), g, np.array(masks, dtype=np.uint64)))
    assert fast == naive.choose_gpus(free, g, masks)
    if g > 0 and bin(free).count("1") >= g:
        assert fast & ~free == 0 and bin(fast).count("1") == g
        assert naive.groups_spanned(fast, masks) == naive.min_gpu_groups(free, g, masks)
    else:
        assert fast == 0


def test_choose_gpus_hand_checked():
    islands = np.array([0x0F, 0xF0], dtype=np.uint64)      # two NVLink islands of 4
    assert choose_gpus(0xFF, 4, islands) == 0x0F
    assert choose_gpus(0b1111_0110, 2, islands) == 0b0000_0110   # best-fit island 0
    assert choose_gpus(0b1111_0110, 3, islands) == 0b0111_0000   # island 1 holds 3
    assert choose_gpus(0b0111_0110, 5, islands) == 0b0111_0110
    assert choose_gpus(0b0111_0110, 6, islands) == 0
    assert choose_gpus(0xFF, 3) == 0b111                          # no groups: lowest
    with pytest.raises(InputError, match="overlap"):
        choose_gpus(0xFF, 1, np.array([3, 6], dtype=np.uint64))


GRES = """\
# an 8-GPU node: two sockets, NVLink pairs
AutoDetect=off
Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-55
Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=56-111
Name=mps Count=100
"""


def test_gres_conf_cores_and_links(tmp_path):
    g = parse_gres_conf(GRES)
    assert g.source == "Cores" and g.num_gpus == 8 and g.masks.tolist() == [0x0F, 0xF0]
    links = "\n".join(f"Name=gpu File=/dev/nvidia{k} Links=" +
                      ",".join("-1" if j == k else ("4" if j // 2 == k // 2 else "0")
                               for j in range(4)) for k in range(4))
    g = parse_gres_conf(links)
    assert g.source == "Links" and g.masks.tolist() == [0b0011, 0b1100]
    p = tmp_path / "gres.conf"
    p.write_text("NodeName=a[1-2] Name=gpu File=/dev/nvidia[0-1] Cores=0-1\n"
                 "NodeName=b1 Name=gpu File=/dev/nvidia[0-3]\n")
    assert read_gres_conf(p, node="a2").masks.tolist() == [0b11]
    assert read_gres_conf(p, node="b1").masks.tolist() == [1, 2, 4, 8]
    assert read_gres_conf(p, node="c9").masks.tolist() == []


@pytest.mark.parametrize("text, line, field, message", [
    ("Name=gpu File=/dev/nvidia0\nName=gpu File=/dev/nvidia[0-1]\n", 2, "File", "twice"),
    ("Name=gpu File=/dev/nvidia0 Cores=3-1\n", 1, "Cores", "CPU range"),
    ("Name=gpu File=/dev/nvidia[0-1] Links=-1,1\n", 1, "Links", "one device"),
    ("Name=gpu File=/dev/nvidia0 Links=-1,x\n", 1, "Links", "numbers"),
    ("Name=gpu File=/dev/nvidia0 Links=0,1\nName=gpu File=/dev/nvidia1 Links=1,-1\n", 1,
     "Links", "itself"),
    ("Name=gpu File=/dev/nvidia0 Links=-1,0,0\n", 1, "Links", "entries"),
    ("Name=gpu Type=h100\n", 1, "File", "without File"),
    ("Name=gpu File=/dev/nvidia0 Colour=red\n", 1, "Colour", "unknown key"),
    ("Name=gpu File=/dev/nvidia99\n", 1, "File", "0..63"),
    ("\nFile=/dev/nvidia0\n", 2, "File", "without Name"),
    ("Name=gpu File=/dev/nvidia0 junk\n", 1, "junk", "Key=value"),
])
def test_gres_conf_malformed(text, line, field, message):
    with pytest.raises(InputError, match=message) as e:
        parse_gres_conf(text, file="gres.conf")
    assert (e.value.file, e.value.line, e.value.field) == ("gres.conf", line, field)


# --------------------------------------------------------------------------- quality

@SETTINGS
@given(st.lists(st.integers(-1, 4), min_size=1, max_size=20), st.data())
def test_placement_quality_matches_naive(leaf, data):
    n = len(leaf)
    jobs = data.draw(st.lists(st.lists(st.integers(0, n - 1), unique=True, max_size=n),
                              max_size=6))
    off = np.concatenate([[0], np.cumsum([len(j) for j in jobs])]).astype(np.int64)
    nodes = np.array([v for j in jobs for v in j], dtype=np.int64)

    class C:
        topology = {"leaf": np.array(leaf, dtype=np.int32)}
    got = placement_quality(C, off, nodes)
    assert got.tolist() == naive.placement_quality(leaf, off.tolist(), nodes.tolist())


def test_placement_summary():
    c = ai_cluster("ai-8k")
    off = np.array([0, 1, 3, 5, 5])
    nodes = np.array([7, 0, 31, 31, 32])          # 1 node; one leaf; two leaves; none
    spans = placement_quality(c, off, nodes)
    assert spans.tolist() == [1, 1, 2, 0]
    assert placement_quality(c, off, nodes, level="spine").tolist() == [1, 1, 1, 0]
    s = placement_summary(spans, off)
    assert s["jobs"] == 3 and s["multi_node_jobs"] == 2
    assert s["multi_node_single_group_share"] == 0.5
    assert s["mean_groups_spanned"] == pytest.approx(4 / 3)
    with pytest.raises(InputError):
        placement_quality(c, np.array([0, 3]), nodes)


# --------------------------------------------------------------------------- sbatch

def test_sbatch_switches_and_segment():
    from fastsched import normalise, parse_args
    from fastsched.io.sbatch import format_request
    norm = normalise(parse_args(["-N", "8", "--switches=2@1:00:00", "--segment=4"]))
    assert (norm.switches, norm.switches_wait, norm.segment) == (2, 3600, 4)
    assert "switches" not in " ".join(norm.ignored)
    assert "ReqSwitch=2@01:00:00 Segment=4" in format_request(norm)
    norm = normalise(parse_args(["-N", "8", "--switches=3"]))
    assert (norm.switches, norm.switches_wait, norm.segment) == (3, None, None)
    for bad, field in ((["--switches=0"], "switches"), (["--switches=2@x"], "switches"),
                       (["--switches=a"], "switches"), (["--segment=3"], "segment")):
        with pytest.raises(InputError) as e:
            normalise(parse_args(["-N", "8"] + bad))
        assert e.value.field.lstrip("-") == field


def test_bench_place_512_scenario_runs():
    from fastsched.bench.scenarios import run_scenario
    fig = run_scenario("place-512", 1)
    assert fig["free_nodes"] == 1875 and fig["tree_switches64_groups_spanned"] <= 64
    assert all(fig[k] > 0 for k in fig if k.endswith("_median_us"))


@pytest.mark.parametrize("content, what", [(b"\xff\xfe\x00bad", "NUL byte"),
                                           (b"Name=gpu File=/dev/nvidia0 \xe9\n", "UTF-8")])
def test_binary_or_non_utf8_topology_and_gres_files(tmp_path, content, what):
    p = tmp_path / "x.conf"
    p.write_bytes(content)
    for read in (lambda: read_gres_conf(p), lambda: read_block_topology(p, ["n1"])):
        with pytest.raises(InputError, match=what) as e:
            read()
        assert e.value.file == str(p) and e.value.line == 1
