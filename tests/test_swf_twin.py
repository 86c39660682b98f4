"""The fast SWF reader (fastsched.io.swf + io.swfparse) against its twin, the line-by-line
reader it replaced (tests/naive_swf.py): the same tables, skips, header, warnings counts and
the same errors (message, line, field) on generated traces and on the bundled ones."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive_swf
from fastsched.io import swf, swfparse
from fastsched.model.errors import InputError
from fastsched.model.jobs import JOB_FIELDS


def outcome(read, path, **kw):
    """What a reader gives: its result, or the InputError's text, line and field."""
    try:
        return "ok", read(path, **kw)
    except InputError as e:
        return "error", (str(e), getattr(e, "line", None), getattr(e, "field", None))


def assert_same_trace(a, b):
    assert (a.path, a.procs, a.header, a.header_lines) == (b.path, b.procs, b.header,
                                                          b.header_lines)
    assert a.skipped == b.skipped and a.num_timeouts == b.num_timeouts
    assert a.user_ids.dtype == b.user_ids.dtype
    assert a.user_ids.tobytes() == b.user_ids.tobytes()
    assert len(a.jobs) == len(b.jobs)
    for name in JOB_FIELDS:
        x, y = getattr(a.jobs, name), getattr(b.jobs, name)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name


def assert_same_fields(a, b):
    assert (a.path, a.header, a.header_lines) == (b.path, b.header, b.header_lines)
    assert a.fields.dtype == b.fields.dtype and a.fields.tobytes() == b.fields.tobytes()
    assert a.lines.dtype == b.lines.dtype and a.lines.tolist() == b.lines.tolist()


def assert_same(path, **kw):
    fast, slow = outcome(swf.read_swf, path, **kw), outcome(naive_swf.read_swf, path, **kw)
    assert fast[0] == slow[0], (fast, slow)
    if fast[0] == "ok":
        assert_same_trace(fast[1], slow[1])
    else:
        assert fast[1] == slow[1]
    fast, slow = outcome(swf.read_swf_fields, path), outcome(naive_swf.read_swf_fields, path)
    assert fast[0] == slow[0], (fast, slow)
    if fast[0] == "ok":
        assert_same_fields(fast[1], slow[1])
    else:
        assert fast[1] == slow[1]


@pytest.mark.parametrize("name", ["KTH-SP2", "lublin_256", "lublin_256_new2"])
@pytest.mark.parametrize("strict", [False, True])
def test_bundled_traces(name, strict):
    assert_same(swf.bundled_trace(name), strict=strict)


# ----------------------------------------------------------------------- generated text

_INT = st.one_of(st.integers(-3, 40), st.just(-1), st.integers(-10**6, 10**9),
                 st.integers(-10**19, 10**19), st.sampled_from([2**53, 2**53 + 1, 2**63]))
#: tokens that are numbers to Python but not plain integers, and ones that are not numbers
_ODD = st.sampled_from(["1.5", "-0", "0", "007", "+3", "1e3", "2.5e1", ".5", "3.", "-0.0",
                        "1_000", "nan", "inf", "-inf", "0x10", "--1", "-", "1-2", "abc",
                        "1;2", "12345678901234567890123", "99999999999999999",
                        "123456789012345678", "1.0000000000000002", "9007199254740993"])


@st.composite
def job_line(draw, job):
    fields = [job, draw(st.integers(0, 10**6)), -1, draw(st.integers(-2, 5000)),
              draw(st.integers(-1, 20)), -1, -1, draw(st.integers(-1, 20)),
              draw(st.integers(-1, 6000)), -1, 1, draw(st.integers(-1, 50)), -1, -1, -1, -1,
              -1, -1]
    toks = [str(v) for v in fields]
    for _ in range(max(0, draw(st.integers(-6, 2)))):
        k = draw(st.integers(0, 17))
        toks[k] = str(draw(_INT)) if draw(st.booleans()) else draw(_ODD)
    if draw(st.integers(0, 40)) == 0:                  # a field too many or too few
        toks = toks[:-1] if draw(st.booleans()) else toks + ["0"]
    seps = draw(st.lists(st.sampled_from([" ", "  ", "\t", " \t "]), min_size=17,
                         max_size=17))
    lead = draw(st.sampled_from(["", "", " ", "\t"]))
    trail = draw(st.sampled_from(["", "", " ", "\t "]))
    return lead + "".join(t + s for t, s in zip(toks, seps + [""])) + trail


_COMMENT = st.sampled_from(["; Version: 2.2", "; MaxProcs: 16", "; MaxNodes: 8",
                            ";  MaxProcs:  32  ", "; MaxProcs: 0", "; MaxProcs: 10.5",
                            "; Note: x", ";", "  ; Computer: test", "; Computer: tést",
                            ";MaxProcs:4", "; Preemption: No ; done", "\t;\tUnixStartTime: 1"])
_NOISE = st.sampled_from(["", "  ", "\t", "\x0b", "\x1c", "\x00", "\x85", "\u2028", "1\x0c2",
                          "\ufeff; Version", "é", "\x7f", "3\x7f", "-\x7f", "1\r2", "; x\x7f",
                          "; x\ry"])


@st.composite
def swf_text(draw):
    lines = draw(st.lists(_COMMENT, max_size=4))
    if draw(st.integers(0, 3)):
        lines.insert(draw(st.integers(0, len(lines))), "; MaxProcs: 16")
    jobs = draw(st.lists(st.integers(1, 60), max_size=25))
    if draw(st.booleans()):
        jobs = sorted(jobs)
    for job in jobs:
        kind = draw(st.integers(0, 40))
        if kind == 0:
            lines.append(draw(_COMMENT))
        elif kind == 1:
            lines.append(draw(_NOISE))
        lines.append(draw(job_line(job)))
    newline = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    return newline.join(lines) + draw(st.sampled_from(["", newline, newline * 2]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=swf_text(), strict=st.booleans(), procs=st.sampled_from([None, 8, 40]))
def test_generated_traces(tmp_path, text, strict, procs):
    path = tmp_path / "t.swf"
    path.write_bytes(text.encode("utf-8"))
    assert_same(path, strict=strict, procs=procs)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_random_bytes(tmp_path, data):
    path = tmp_path / "t.swf"
    path.write_bytes(b"; MaxProcs: 4\n" + data)
    assert_same(path)


def test_many_lines_and_a_short_one(tmp_path):
    """A long block parses whole; a short line in it is named."""
    lines = ["; MaxProcs: 64"] + [f"{j} {j * 7} -1 {j % 50} 4 -1 -1 {j % 9 - 1} 600 -1 1 "
                                  f"{j % 5} -1 -1 -1 -1 -1 -1" for j in range(1, 400)]
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    assert_same(path)
    path.write_text("\n".join(lines[:200] + ["1 2 3"] + lines[200:]) + "\n")
    with pytest.raises(InputError) as e:
        swf.read_swf(path)
    assert e.value.line == 201


def test_parse_numbers_digits():
    """Every length of plain integer, with and without sign, is exact."""
    toks = []
    for n in range(1, 19):
        for v in (10 ** (n - 1), 10 ** n - 1, int("123456789012345678"[:n])):
            toks += [str(v), "-" + str(v)]
    toks += ["0"] * (-len(toks) % 4)
    text = "\n".join(" ".join(toks[i:i + 4]) for i in range(0, len(toks), 4)).encode()
    blob = np.frombuffer(text, dtype=np.uint8)
    values, rows = swfparse.parse_numbers(blob, 4)
    assert values.ravel().tolist() == [float(t) for t in toks]
    assert [np.signbit(v) for v in values.ravel()] == [t.startswith("-") for t in toks]
    assert rows.tolist() == list(range(len(toks) // 4))
