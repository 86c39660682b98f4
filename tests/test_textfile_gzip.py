"""A corrupt gzip body is an InputError naming the file (zlib's own error inside
gzip.decompress is not an OSError)."""
import pytest

from fastsched.io.swf import bundled_trace, read_swf
from fastsched.io.textfile import read_decompressed
from fastsched.model.errors import InputError


def test_corrupt_gzip_body_is_an_input_error(tmp_path):
    raw = bundled_trace("KTH-SP2").read_bytes()
    bad = tmp_path / "t.swf.gz"
    bad.write_bytes(raw[:34] + bytes([raw[34] ^ 0xFF]) + raw[35:])   # zlib.error inside
    for read in (read_decompressed, read_swf):
        with pytest.raises(InputError, match="cannot decompress") as e:
            read(bad)
        assert e.value.file == str(bad)
