"""io.textfile.gunzip against gzip.decompress: the same text, or an error from both."""
from __future__ import annotations

import gzip
import lzma
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsched.io.textfile import gunzip, read_decompressed
from fastsched.model.errors import InputError

ERRORS = (OSError, EOFError, zlib.error, ValueError)


def outcome(fn, raw):
    try:
        return "ok", fn(raw)
    except ERRORS:
        return "error", None


@st.composite
def gzip_data(draw):
    members = draw(st.lists(st.binary(max_size=200), min_size=1, max_size=3))
    raw = b"".join(gzip.compress(m, mtime=0) for m in members)
    raw += b"\0" * draw(st.integers(0, 3))
    cut = draw(st.one_of(st.none(), st.integers(0, len(raw))))
    if cut is not None:
        raw = raw[:cut]
    if draw(st.integers(0, 5)) == 0 and raw:                 # a flipped byte
        i = draw(st.integers(0, len(raw) - 1))
        raw = raw[:i] + bytes([raw[i] ^ draw(st.integers(1, 255))]) + raw[i + 1:]
    if draw(st.integers(0, 5)) == 0:
        raw += draw(st.binary(min_size=1, max_size=5))       # trailing garbage
    return raw


@settings(max_examples=400, deadline=None)
@given(raw=gzip_data())
def test_same_as_gzip_decompress(raw):
    assert outcome(gunzip, raw) == outcome(gzip.decompress, raw)


@settings(max_examples=100, deadline=None)
@given(raw=st.binary(max_size=64))
def test_any_bytes(raw):
    assert outcome(gunzip, raw)[0] == outcome(gzip.decompress, raw)[0] or not raw


def test_bundled_trace_and_errors(tmp_path):
    from fastsched.io.swf import bundled_trace
    raw = bundled_trace("KTH-SP2").read_bytes()
    assert gunzip(raw) == gzip.decompress(raw)
    bad = tmp_path / "t.swf.gz"
    bad.write_bytes(raw[:1000] + bytes([raw[1000] ^ 0xFF]) + raw[1001:])
    with pytest.raises(InputError, match="cannot decompress") as e:
        read_decompressed(bad)
    assert e.value.file == str(bad)
    bad.write_bytes(lzma.compress(b"x"))
    with pytest.raises(InputError, match="cannot decompress"):
        read_decompressed(bad)
