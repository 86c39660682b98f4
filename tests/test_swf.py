import gzip
import lzma

import numpy as np
import pytest

from fastsched.model.errors import InputError
from fastsched.io.swf import SkippedJob, bundled_trace, read_swf

HEADER = """; Version: 2.2
; Computer: Test machine
; Information: http://example.org/
;              http://example.org/more
; MaxNodes: 8
; MaxProcs: 16
;
"""


def rec(job, submit, run, alloc, req, limit, user=-1, wait=-1):
    f = [job, submit, wait, run, alloc, -1, -1, req, limit, -1, 1, user, -1, -1, -1, -1, -1, -1]
    return " ".join(str(x) for x in f)


def write(tmp_path, lines, name="t.swf", header=HEADER):
    text = header + "\n".join(lines) + "\n"
    p = tmp_path / name
    if name.endswith(".gz"):
        p.write_bytes(gzip.compress(text.encode()))
    elif name.endswith(".xz"):
        p.write_bytes(lzma.compress(text.encode()))
    else:
        p.write_text(text)
    return p


BASIC = [
    rec(1, 10, 100, 4, 8, 200, user=3),    # field 8 (8) wins over field 5 (4)
    rec(2, 20, 50, 4, -1, 60),              # field 8 missing -> field 5
    rec(3, 30, 0, 2, 2, -1),                # no limit, runtime 0 -> limit 1
    rec(4, 40, 500, 2, 2, -1),              # no limit -> runtime
    rec(5, 50, 300, 1, 1, 120),             # runtime > limit -> timeout
]


@pytest.mark.parametrize("name", ["t.swf", "t.swf.gz", "t.swf.xz"])
def test_field_semantics(tmp_path, name):
    tr = read_swf(write(tmp_path, BASIC, name))
    j = tr.jobs
    assert tr.procs == 16
    assert j.job_id.tolist() == [1, 2, 3, 4, 5]
    assert j.num_nodes.tolist() == [8, 4, 2, 2, 1]
    assert j.runtime.tolist() == [100, 50, 0, 500, 300]
    assert j.time_limit.tolist() == [200, 60, 1, 500, 120]
    assert j.user.tolist() == [3, -1, -1, -1, -1]
    assert (j.cpus_per_node == 1).all() and (j.gpus_per_node == 0).all()
    assert tr.num_timeouts == 1
    assert tr.skipped == []
    assert tr.header["MaxProcs"] == "16"
    assert tr.header["Computer"] == "Test machine"
    assert "http" not in tr.header          # continuation line is not a key
    assert tr.header_lines[0] == "; Version: 2.2"
    assert len(tr.header_lines) == 7


def test_compression_sniffed_without_extension(tmp_path):
    p = write(tmp_path, BASIC, "t.swf.gz")
    q = tmp_path / "renamed.swf"
    q.write_bytes(p.read_bytes())
    assert len(read_swf(q).jobs) == 5


def test_float_times_rounded_and_integral_floats_accepted(tmp_path):
    line = "7 100.6 -1 3599.5 4.0 -1 -1 4 3600.0 -1 1 2 -1 -1 -1 -1 -1 -1"
    tr = read_swf(write(tmp_path, [line]))
    assert tr.jobs.submit_time.tolist() == [101]
    assert tr.jobs.runtime.tolist() == [3600]
    assert tr.jobs.time_limit.tolist() == [3600]
    assert tr.jobs.num_nodes.tolist() == [4]


def test_sorted_by_submit_then_id(tmp_path):
    lines = [rec(9, 50, 1, 1, 1, 10), rec(3, 50, 1, 1, 1, 10), rec(5, 10, 1, 1, 1, 10),
             rec(1, 70, 1, 1, 1, 10)]
    tr = read_swf(write(tmp_path, lines))
    assert tr.jobs.job_id.tolist() == [5, 3, 9, 1]
    assert tr.jobs.submit_time.tolist() == [10, 50, 50, 70]


SKIPPY = [
    rec(1, 0, 10, 1, 1, 10),
    rec(2, 1, 10, 0, 0, 10),       # 0 processors
    rec(3, 2, 10, 1, 32, 10),      # too many
    rec(4, 3, -1, 1, 1, 10),       # unknown runtime
    rec(5, 4, -5, 1, 1, 10),       # negative runtime
    rec(6, 5, 10, -1, -1, 10),     # -1 processors
    rec(7, 6, 10, 16, 16, 10),     # exactly the machine: fine
]


def test_skipped_jobs_listed_in_file_order(tmp_path):
    tr = read_swf(write(tmp_path, SKIPPY))
    first = HEADER.count("\n") + 1
    assert tr.jobs.job_id.tolist() == [1, 7]
    assert tr.skipped == [
        SkippedJob(2, first + 1, "requests 0 processors"),
        SkippedJob(3, first + 2, "requests 32 processors, machine has 16"),
        SkippedJob(4, first + 3, "unknown runtime"),
        SkippedJob(5, first + 4, "negative runtime -5"),
        SkippedJob(6, first + 5, "requests -1 processors"),
    ]


def test_strict_raises_on_first_unrunnable(tmp_path):
    p = write(tmp_path, SKIPPY)
    with pytest.raises(InputError) as ei:
        read_swf(p, strict=True)
    e = ei.value
    assert e.line == HEADER.count("\n") + 2
    assert e.field == "5 (allocated_processors)"
    assert e.file == str(p)
    assert "requests 0 processors" in str(e)


def test_strict_runtime_field(tmp_path):
    p = write(tmp_path, [rec(1, 0, 10, 1, 1, 10), rec(2, 1, -3, 1, 1, 10)])
    with pytest.raises(InputError) as ei:
        read_swf(p, strict=True)
    assert ei.value.field == "4 (run_time)"
    assert ei.value.line == HEADER.count("\n") + 2


def test_strict_passes_clean_file(tmp_path):
    assert len(read_swf(write(tmp_path, BASIC), strict=True).jobs) == 5


def _bad(tmp_path, bad_line, *, before=2):
    lines = [rec(i + 1, i, 10, 1, 1, 10) for i in range(before)] + [bad_line] + \
            [rec(100, 100, 10, 1, 1, 10)]
    p = write(tmp_path, lines)
    with pytest.raises(InputError) as ei:
        read_swf(p)
    e = ei.value
    lineno = HEADER.count("\n") + before + 1
    assert e.file == str(p)
    assert e.line == lineno
    assert f"{p}:{lineno}" in str(e)
    return e


def test_wrong_field_count(tmp_path):
    e = _bad(tmp_path, "3 5 -1 10 1 -1 -1 1 10 -1 1 -1 -1 -1 -1 -1 -1")
    assert e.field is None
    assert "17" in str(e)


def test_too_many_fields(tmp_path):
    e = _bad(tmp_path, rec(3, 5, 10, 1, 1, 10) + " 7")
    assert "19" in str(e)


def test_non_numeric_field(tmp_path):
    e = _bad(tmp_path, "3 5 -1 10 x -1 -1 1 10 -1 1 -1 -1 -1 -1 -1 -1 -1")
    assert e.field == "5 (allocated_processors)"
    assert "'x'" in str(e)


def test_non_integral_count(tmp_path):
    e = _bad(tmp_path, "3 5 -1 10 1 -1 -1 2.5 10 -1 1 -1 -1 -1 -1 -1 -1 -1")
    assert e.field == "8 (requested_processors)"
    e = _bad(tmp_path, "3.5 5 -1 10 1 -1 -1 2 10 -1 1 -1 -1 -1 -1 -1 -1 -1")
    assert e.field == "1 (job_number)"


def test_missing_or_negative_submit(tmp_path):
    e = _bad(tmp_path, rec(3, -1, 10, 1, 1, 10))
    assert e.field == "2 (submit_time)"
    assert "missing" in str(e)
    e = _bad(tmp_path, rec(3, -7, 10, 1, 1, 10))
    assert e.field == "2 (submit_time)"


def test_duplicate_job_number(tmp_path):
    e = _bad(tmp_path, rec(1, 9, 10, 1, 1, 10))
    assert e.field == "1 (job_number)"
    assert "duplicate" in str(e)


def test_first_bad_line_is_reported(tmp_path):
    lines = [rec(1, 0, 10, 1, 1, 10), "2 0 x", rec(3, -1, 1, 1, 1, 1)]
    p = write(tmp_path, lines)
    with pytest.raises(InputError) as ei:
        read_swf(p)
    assert ei.value.line == HEADER.count("\n") + 2


def test_missing_header_requires_procs(tmp_path):
    p = write(tmp_path, BASIC, header="; Version: 2\n")
    with pytest.raises(InputError) as ei:
        read_swf(p)
    assert "MaxProcs" in str(ei.value) and "procs=" in str(ei.value)
    assert ei.value.file == str(p)
    tr = read_swf(p, procs=8)
    assert tr.procs == 8
    assert len(tr.jobs) == 5


def test_maxnodes_fallback_and_procs_override(tmp_path):
    p = write(tmp_path, BASIC, header="; MaxNodes: 4\n; MaxProcs: -1\n")
    tr = read_swf(p)
    assert tr.procs == 4
    assert [s.job_id for s in tr.skipped] == [1]   # 8 processors > 4
    tr = read_swf(p, procs=100)
    assert tr.procs == 100 and tr.skipped == []
    with pytest.raises(InputError):
        read_swf(p, procs=0)


def test_blank_lines_and_inner_comments_ignored(tmp_path):
    lines = ["", BASIC[0], "; a comment", "   ", BASIC[1]]
    tr = read_swf(write(tmp_path, lines))
    assert tr.jobs.job_id.tolist() == [1, 2]


def test_empty_trace(tmp_path):
    tr = read_swf(write(tmp_path, []))
    assert len(tr.jobs) == 0 and tr.num_timeouts == 0


def test_bundled_kth():
    p = bundled_trace()
    assert p.name == "KTH-SP2-1996-2.1-cln.swf.gz"
    tr = read_swf(p)
    assert tr.procs == 100
    assert len(tr.jobs) == 28475
    assert [s.job_id for s in tr.skipped] == [27313]
    assert tr.header["Acknowledge"] == "Lars Malinowsky"
    assert tr.header_lines[0] == "; Version: 2.2"
    assert (np.diff(tr.jobs.submit_time) >= 0).all()
    assert tr.jobs.num_nodes.max() <= 100 and tr.jobs.num_nodes.min() >= 1
    assert (tr.jobs.time_limit >= 1).all()
    assert tr.num_timeouts == int((tr.jobs.runtime > tr.jobs.time_limit).sum()) > 0
    with pytest.raises(InputError):
        bundled_trace("nope")


def test_hashed_user_ids_are_labels(tmp_path):
    # Standardised traces hash user ids into 14-digit numbers: read them, keep them.
    big = 35012304659472
    p = write(tmp_path, [rec(1, 0, 10, 1, 1, 20, user=big), rec(2, 5, 10, 1, 1, 20, user=7),
                         rec(3, 6, 10, 1, 1, 20, user=big), rec(4, 7, 10, 1, 1, 20)])
    t = read_swf(p)
    assert t.user_ids.tolist() == [big, 7, big, -1]
    assert t.jobs.user.tolist() == [1, 0, 1, -1]          # renumbered by value, -1 kept


def test_out_of_range_field_says_so(tmp_path):
    p = write(tmp_path, [rec(1, 0, 10, 1, 1, 20), rec(2, 5, 10, 1, 99_999_999_999, 20)])
    with pytest.raises(InputError, match=r"t.swf:9: field 8 \(requested_processors\): "
                       r"'99999999999' is out of range"):
        read_swf(p)


@pytest.mark.parametrize("field, value", [(9, "1e30"), (2, "1e30"), (4, "1e30"), (9, "-1e30")])
def test_absurd_times_are_errors_not_estimates(tmp_path, field, value):
    toks = rec(1, 0, 10, 1, 1, 20).split()
    toks[field - 1] = value
    with pytest.raises(InputError, match=f"field {field} .*out of range"):
        read_swf(write(tmp_path, [" ".join(toks)]))


def test_absurd_machine_size_is_refused(tmp_path):
    p = write(tmp_path, [rec(1, 0, 10, 1, 1, 20)], header="; MaxProcs: 1e30\n")
    with pytest.raises(InputError, match="MaxProcs 1e30 is out of range"):
        read_swf(p)
    with pytest.raises(InputError, match="procs must be an integer in"):
        read_swf(write(tmp_path, [rec(1, 0, 10, 1, 1, 20)]), procs=2**63)
