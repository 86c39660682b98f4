"""The vectorised sacct reading equals its per-row twins (tests/naive_sacct.py): the
byte table's fields, lines, texts, codes, numbers and ISO times; the NodeLists
resolved together (io/hostindex.py) and one by one (hostlist.expand)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import naive_sacct as naive
from fastsched.io.bytetable import ByteTable
from fastsched.io.hostindex import index_lists

NCOLS = 4

TIMES = st.one_of(
    st.builds(lambda y, mo, d, h, mi, s: f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}",
              st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32),
              st.integers(0, 25), st.integers(0, 61), st.integers(0, 62)),
    st.sampled_from(["2024-02-29T23:59:59", "2023-02-29T00:00:00", "1970-01-01T00:00:00",
                     "2024-03-01T10:00:00Z", "2024-03-01 10:00:00", "2024-03-01T10:00:0",
                     "2024-03-01T10:00:0a", "2024/03/01T10:00:00", "Unknown", "None", "",
                     "2024-03-01T1:\x8000:00", "２０２４-03-01T10:00:00"]))
FIELDS = st.one_of(
    TIMES, st.integers(0, 10**19).map(str),
    st.text(alphabet="0123456789abcT:-_.+[],=/ \r\x00é", max_size=30),
    st.text(alphabet="ab", min_size=250, max_size=300))


def _table(rows: list[list[str]], endings: list[str], last_newline: bool) -> bytes:
    header = "|".join(f"F{k}" for k in range(NCOLS))
    lines = [header] + ["|".join(r) for r in rows]
    text = "".join(line + endings[k % len(endings)] for k, line in enumerate(lines))
    if not last_newline:
        text = text.rstrip("\n")
    return text.encode("utf-8")


ROWS = st.lists(st.one_of(st.lists(FIELDS, min_size=NCOLS, max_size=NCOLS),
                          st.lists(FIELDS, min_size=0, max_size=NCOLS + 2)), max_size=25)


@settings(max_examples=90, deadline=None)
@given(ROWS, st.lists(st.sampled_from(["\n", "\r\n", "\n\n"]), min_size=1, max_size=3),
       st.booleans())
def test_byte_table_equals_a_line_split(rows, endings, last_newline):
    raw = _table(rows, endings, last_newline)
    lines, fields, wrong = naive.split_rows(raw, NCOLS)
    table = ByteTable(raw, NCOLS)
    assert table.lines.tolist() == lines and table.wrong == wrong
    for col in range(NCOLS):
        column = [f[col] for f in fields]
        assert table.lengths(col).tolist() == [len(v) for v in column]
        texts = [v.decode("utf-8", "replace") for v in column]
        assert [table.text(col, i) for i in range(len(table))] == texts
        if all(v.isascii() and b"\x00" not in v for v in column):
            assert table.strings(col).tolist() == texts
        codes, uniques = table.factorize(col)         # codes number the distinct texts
        want_codes, want_uniques = naive.factorize(column)
        assert [uniques[c] for c in codes] == texts and len(uniques) == len(want_uniques)
        assert len(set(zip(codes.tolist(), want_codes))) == len(want_uniques)
        value, ok = table.digits(col, 18)
        want = [naive.digits(v, 18) for v in column]
        assert ok.tolist() == [w is not None for w in want]
        assert value.tolist() == [w or 0 for w in want]
        secs, ok = table.iso_times(col)
        want = [naive.iso_seconds(v) for v in column]
        assert ok.tolist() == [w is not None for w in want]
        assert secs.tolist() == [-1 if w is None else w for w in want]
    together = table.iso_time_columns(list(range(NCOLS)))
    for col in range(NCOLS):
        assert [a.tolist() for a in together[col]] == [a.tolist() for a in table.iso_times(col)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(TIMES, min_size=NCOLS, max_size=NCOLS), min_size=1, max_size=40),
       st.booleans())
def test_time_columns_read_together_equal_one_by_one(rows, keep_some):
    """Mostly 19-byte times: the one-gather span path carries most rows."""
    table = ByteTable(_table(rows, ["\n"], True), NCOLS)
    if keep_some:
        table.keep(np.arange(len(table)) % 3 != 1)
    together = table.iso_time_columns(list(range(NCOLS)))
    for col in range(NCOLS):
        secs, ok = together[col]
        want = [naive.iso_seconds(table.text(col, i).encode()) for i in range(len(table))]
        assert secs.tolist() == [-1 if w is None else w for w in want]
        assert ok.tolist() == [w is not None for w in want]


NAMES = ["c01", "c02", "c03", "c10", "c11", "c100", "g1", "g2", "g9", "g10", "gpu-a07",
         "node1", "node10", "rack1n01", "x0001", "x0002", "x0010"]
HOSTLISTS = st.one_of(
    st.sampled_from(NAMES + ["c[01-03]", "c[01,03,10-11]", "c[1-3]", "g[1-10]", "g[9-10],c01",
                             "x[0001-0002,0010]", "node1[0]", "node[1,10]", "rack1n[01]",
                             "c[03-01]", "c[01-02", "c01,,c02", "c01,", "c[01-02] ", "zz",
                             "c[01-99999999999]", "c[]", "gpu-a[07]", "g[01-02]"]),
    st.lists(st.sampled_from(["c", "g", "x", "node", "q"]), min_size=1, max_size=3).flatmap(
        lambda prefixes: st.tuples(*[st.tuples(st.just(p), st.lists(
            st.tuples(st.integers(0, 120), st.integers(0, 3), st.integers(1, 4)),
            min_size=1, max_size=3)) for p in prefixes])).map(
        lambda groups: ",".join(p + "[" + ",".join(
            f"{a:0{w}d}" if n == 1 else f"{a:0{w}d}-{a + n - 1}" for a, n, w in
            ((a, n, w) for a, w, n in ranges)) + "]" for p, ranges in groups)))


@settings(max_examples=120, deadline=None)
@given(st.lists(HOSTLISTS, min_size=1, max_size=12), st.data())
def test_node_lists_together_equal_one_by_one(texts, data):
    wanted = sorted(data.draw(st.sets(st.integers(0, len(texts) - 1))))
    offsets, nodes, slow = index_lists(texts, np.array(wanted, np.int64), NAMES)
    for k, text in enumerate(texts):
        got = nodes[offsets[k]:offsets[k + 1]].tolist()
        if k not in wanted or k in slow:
            assert got == []
            continue
        assert got == naive.node_list(text, NAMES)
    # a list the fast path leaves alone is one the slow path must look at: it either
    # fails there or is of a shape the fast path does not take
    for k in slow.tolist():
        assert k in wanted


TRES_ITEMS = st.one_of(
    st.builds("{}={}".format, st.sampled_from(["cpu", "node", "gres/gpu", "gres/gpu:a100",
                                               "gres/gpu:h100", "gres/gpufoo", "billing",
                                               "energy", "fs/disk", "license/x"]),
              st.one_of(st.integers(0, 10**13).map(str),
                        st.sampled_from(["", "x", "1.5", "1=2", "²", "007", " 4", "4\r"]))),
    st.builds("mem={}{}".format, st.one_of(st.integers(0, 10**6).map(str),
                                           st.sampled_from(["1.5", "0.25", "x", ""])),
              st.sampled_from(["", "K", "M", "G", "T", "P", "g", "X"])),
    st.sampled_from(["", "cpu", " cpu=2", "\tnode=1", "é=1", "Unknown", "cpu=１"]))


@settings(max_examples=120, deadline=None)
@given(st.lists(st.lists(TRES_ITEMS, max_size=7).map(",".join), max_size=12))
def test_tres_together_equal_one_by_one(texts):
    """parse_tres_many gives parse_tres's value for every text it parses, and leaves
    every text that parse_tres refuses to it."""
    from fastsched.io.sacctvalues import parse_tres, parse_tres_many
    from fastsched.model.errors import InputError
    table, types, done = parse_tres_many(texts)
    for k, text in enumerate(texts):
        try:
            want = parse_tres(text)
        except (InputError, ValueError):
            assert not done[k]
            continue
        if done[k]:
            assert tuple(table[k].tolist()) == want[:3] + want[4:] and types[k] == want[3]


def test_tres_usual_forms_are_parsed_together():
    from fastsched.io.sacctvalues import parse_tres, parse_tres_many
    texts = ["billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=32G,node=1", "cpu=4,mem=3900M,node=1",
             "cpu=4,gres/gpu:v100=1,gres/gpu:t4=2", "billing=1,cpu=1,energy=12,mem=0.5G,node=1",
             "cpu=2,node=1,gres/gpu:h100=8"]
    table, types, done = parse_tres_many(texts)
    assert done.all()
    for k, text in enumerate(texts):
        want = parse_tres(text)
        assert tuple(table[k].tolist()) == want[:3] + want[4:] and types[k] == want[3]
