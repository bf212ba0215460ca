"""Damaged and forged files: truncation, bit flips, and one named test per hand-forged
file in ``tests/data/bad/`` (arrow-rs ``bad_data.rs`` style).

The contract under test: reading a damaged file raises :class:`CorruptFileError`
(:class:`ChecksumError` when a checksum catches it) or, for well-formed data this
version cannot handle, :class:`UnsupportedError` — never another exception, never a
crash, and never a silently wrong answer while checksums are verified.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
import strategies as S
from rcfmt import ChecksumError, CorruptFileError, RcfmtError, UnsupportedError
from rcfmt.index.bloom.chunks import read_filter

HERE = Path(__file__).resolve().parents[1]  # (tests/)
BAD = HERE / "data" / "bad"
ROOT = HERE.parent


def read_everything(path, verify: bool = True) -> pa.Table:
    """Touch every byte a reader may use: footer, all chunks, all page indexes, all
    bloom filters, stats."""
    with rcfmt.open(path, verify_checksums=verify) as f:
        table = f.read(use_threads=False)
        for b in range(f.num_blocks):
            for c in range(len(f.schema)):
                f.page_stats(b, c)
                read_filter(f, b, c)
        for name in f.schema.names:
            f.block_stats(name)
        return table


class InPlace:
    """A scratch copy of a file, damaged and repaired in place with ``pwrite`` and
    ``ftruncate`` (rewriting a file per trial costs milliseconds on some filesystems)."""

    def __init__(self, path: Path, data: bytes):
        self.path, self.data = path, data
        path.write_bytes(data)
        self.fd = os.open(path, os.O_RDWR)

    def put(self, pos: int, chunk: bytes) -> None:
        os.pwrite(self.fd, chunk, pos)

    def restore(self, pos: int, length: int) -> None:
        os.pwrite(self.fd, self.data[pos: pos + length], pos)

    def truncate(self, n: int) -> None:
        os.ftruncate(self.fd, n)

    def close(self) -> None:
        os.close(self.fd)


# ============================================================================ files under test
FLIP_TYPES = {"s": pa.string(), "r": pa.int16(), "f": pa.float64(), "b": pa.large_binary(), "t": pa.bool_()}
FLIP_OPTIONS = dict(block_rows=8, page_rows=4, stats_truncate=4, bloom_filter_columns=["s", "b"],
                    encoding={"s": "dictionary", "r": "rle", "f": "plain", "b": "plain", "t": "rle"})


@pytest.fixture(scope="module")
def all_types_file(tmp_path_factory):
    """All types, 3 blocks, nulls, dictionary + rle + plain chunks, zstd."""
    table = S.example_table(20, seed=21)
    path = tmp_path_factory.mktemp("corrupt") / "all.rcfmt"
    rcfmt.write_table(table, path, block_rows=8, page_rows=4, compression="zstd", stats_truncate=6,
                      bloom_filter_columns=["i64", "lstr", "date"], encoding={"str": "dictionary", "u8": "dictionary", "i16": "rle", "bool": "rle",
                                "f64": "plain", "lstr": "plain", "dec5": "rle"})
    with rcfmt.open(path) as f:
        encodings = {int(f.footer.chunks[c][b]["encoding"]) for c in range(len(f.schema)) for b in range(3)}
        assert {0, 1, 2} <= encodings and f.num_blocks == 3
        assert f.footer.bloom_region[1] > 0
    return path, table


def _flip_file(directory: Path, compression: str):
    table = S.example_table(16, seed=22, types=FLIP_TYPES)
    path = directory / f"flip-{compression}.rcfmt"
    rcfmt.write_table(table, path, compression=compression, **FLIP_OPTIONS)
    with rcfmt.open(path) as f:
        assert f.footer.bloom_region[1] > 0  # damage must reach bloom filters too
    return path, table


@pytest.fixture(scope="module", params=["zstd", "lz4", "none"])
def flip_file(request, tmp_path_factory):
    """A small file (2 blocks x 5 columns x 2 pages) for exhaustive single-byte damage."""
    return _flip_file(tmp_path_factory.mktemp("flip"), request.param)


# ============================================================================ (a) truncation
def test_every_prefix_is_rejected(all_types_file, tmp_path):
    path, _ = all_types_file
    data = path.read_bytes()
    cut = InPlace(tmp_path / "cut.rcfmt", data)
    for n in range(len(data) - 1, -1, -1):
        cut.truncate(n)
        try:
            read_everything(cut.path)
        except CorruptFileError as exc:
            assert exc.path == str(cut.path), n
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"prefix of {n} bytes raised {type(exc).__name__}: {exc}") from exc
        else:
            raise AssertionError(f"prefix of {n} bytes was read without error")
    cut.close()


def test_data_truncated_but_footer_kept_is_rejected(all_types_file, tmp_path):
    """Drop bytes before the footer (as a bad copy or a crashed append would): every
    location the footer holds is checked against the new, smaller file."""
    path, _ = all_types_file
    data = path.read_bytes()
    footer_len = int.from_bytes(data[-16:-8], "little")
    footer_start = len(data) - 16 - footer_len
    footer = data[footer_start:]
    cut = InPlace(tmp_path / "cut.rcfmt", data)
    for n in range(footer_start - 1, 7, -5):
        cut.put(n, footer)
        cut.truncate(n + len(footer))
        try:
            read_everything(cut.path)
        except CorruptFileError:
            pass
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"cut at {n} raised {type(exc).__name__}: {exc}") from exc
        else:
            raise AssertionError(f"file cut at {n} with its footer kept was read without error")
    cut.close()


def test_unchanged_file_reads_back(all_types_file):
    path, table = all_types_file
    S.assert_tables_identical(read_everything(path), table)


# ============================================================================ (b) bit flips, checksums on
def test_every_single_byte_flip_is_detected(flip_file, tmp_path):
    """Flip one bit in every byte of the file, one byte at a time.

    Every byte between the 8-byte header and the 16-byte tail is covered by a CRC
    (page headers, page bodies, page index, bloom filters, footer), so those flips must raise
    ChecksumError. Header and tail flips raise CorruptFileError, except the header's
    version field, where a flip reads as a newer format (UnsupportedError). Nothing
    may be read back silently.
    """
    path, table = flip_file
    data = path.read_bytes()
    damaged = InPlace(tmp_path / "flip.rcfmt", data)
    outcomes: dict[str, list[int]] = {}
    for pos in range(len(data)):
        damaged.put(pos, bytes([data[pos] ^ 1 << (pos * 5 % 8)]))
        try:
            read_everything(damaged.path)
        except ChecksumError:
            kind = "checksum"
        except UnsupportedError:
            kind = "unsupported"
        except CorruptFileError:
            kind = "corrupt"
        except Exception as exc:  # noqa: BLE001 - the point of the test
            raise AssertionError(f"flip at byte {pos} raised {type(exc).__name__}: {exc}") from exc
        else:
            kind = "silent"
        finally:
            damaged.restore(pos, 1)
        outcomes.setdefault(kind, []).append(pos)
    damaged.close()
    size = len(data)
    assert outcomes.get("silent", []) == [], "flips that went unnoticed"
    assert set(outcomes.get("unsupported", [])) <= {4, 5, 6, 7}
    body = [p for p in outcomes.get("corrupt", []) if 8 <= p < size - 16]
    assert body == [], "flips inside checksummed regions that were not reported as ChecksumError"
    # the tail's crc is a checksum, its magic is not
    assert set(range(size - 8, size - 4)) <= set(outcomes["checksum"])
    assert set(range(size - 4, size)) <= set(outcomes["corrupt"])
    assert set(range(0, 4)) <= set(outcomes["corrupt"])


def test_random_multi_byte_damage_is_detected(tmp_path):
    """Overwrite 1..16 consecutive bytes with random values at random places."""
    path, table = _flip_file(tmp_path, "zstd")
    data = path.read_bytes()
    damaged = InPlace(tmp_path / "damaged.rcfmt", data)
    rng = random.Random(1234)
    for trial in range(1000):
        k = rng.randint(1, 16)
        pos = rng.randrange(8, len(data) - 16 - k)
        garbage = rng.randbytes(k)
        if garbage == data[pos: pos + k]:
            continue
        damaged.put(pos, garbage)
        with pytest.raises(ChecksumError):
            read_everything(damaged.path)
        damaged.restore(pos, k)
    damaged.close()


# ============================================================================ (b) bit flips, checksums off
_NO_VERIFY_SCRIPT = textwrap.dedent("""
    import os, random, sys
    import rcfmt
    from rcfmt import RcfmtError
    from rcfmt.index.bloom.chunks import read_filter
    src, dst, seed, trials = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    data = open(src, "rb").read()
    open(dst, "wb").write(data)
    fd = os.open(dst, os.O_RDWR)
    rng = random.Random(seed)
    for trial in range(trials):
        pos = rng.randrange(len(data))
        value = data[pos] ^ (1 << rng.randrange(8)) if trial % 2 else rng.randrange(256)
        os.pwrite(fd, bytes([value]), pos)
        print(f"trial {trial} pos {pos} byte {value}", flush=True)
        try:
            with rcfmt.open(dst, verify_checksums=False) as f:
                f.read(use_threads=False)
                for b in range(f.num_blocks):
                    for c in range(len(f.schema)):
                        f.page_stats(b, c)
                        read_filter(f, b, c)
                for name in f.schema.names:
                    f.block_stats(name)
        except RcfmtError:
            pass
        except BaseException as exc:
            print(f"NON-RCFMT {type(exc).__name__} at pos {pos}: {exc}", flush=True)
        os.pwrite(fd, data[pos:pos + 1], pos)
    print("DONE", flush=True)
""")


@pytest.mark.parametrize("compression,seed,trials", [("zstd", 1, 1500), ("none", 2, 1500)])
def test_damage_without_checksums_never_crashes(tmp_path, compression, seed, trials):
    """With verify_checksums=False damage may go unnoticed, but it must never crash the
    interpreter or raise anything outside rcfmt's hierarchy. Runs in a subprocess so
    that a segfault is reported instead of killing the test run."""
    path, _ = _flip_file(tmp_path, compression)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _NO_VERIFY_SCRIPT, str(path), str(tmp_path / "d.rcfmt"),
                           str(seed), str(trials)], capture_output=True, text=True, env=env, timeout=300)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, f"interpreter died ({proc.returncode}) after: {lines[-1:]}\n{proc.stderr[-2000:]}"
    assert lines and lines[-1] == "DONE"
    assert [x for x in lines if x.startswith("NON-RCFMT")] == []


# ============================================================================ (c) hand-forged files
#: file name -> name of the test that covers it (filled by @bad_file)
COVERED: dict[str, str] = {}


def bad_file(name: str):
    def register(fn):
        assert name not in COVERED, f"{name} has two tests"
        COVERED[name] = fn.__name__
        return fn
    return register


def expect(name: str, exc_type=CorruptFileError, match: str | None = None, *, column=None, block=None, page=None):
    """Reading ``bad/name`` raises exactly ``exc_type`` whose message matches ``match``
    and, for CorruptFileError, names the file and the given column/block/page."""
    path = BAD / name
    with pytest.raises(RcfmtError) as info:
        read_everything(path)
    err = info.value
    assert type(err) is exc_type, f"{name}: {type(err).__name__}: {err}"
    if match is not None:
        assert __import__("re").search(match, str(err)), f"{name}: {err}"
    if isinstance(err, CorruptFileError):
        assert err.path == str(path) and f"file={path}" in str(err)
        for field, want in (("column", column), ("block", block), ("page", page)):
            if want is not None:
                assert getattr(err, field) == want, f"{name}: {field}={getattr(err, field)!r}, expected {want!r}"
                shown = f"{field}={want!r}" if field == "column" else f"{field}={want}"
                assert shown in str(err), f"{name}: message lacks {shown}: {err}"
    return err


def test_every_bad_file_has_a_test():
    files = sorted(p.name for p in BAD.iterdir() if p.suffix == ".rcfmt")
    assert files, "tests/data/bad is empty: run tests/data/make_bad.py"
    untested = sorted(set(files) - set(COVERED))
    missing = sorted(set(COVERED) - set(files))
    assert not untested, f"files in tests/data/bad without a test: {untested}"
    assert not missing, f"tests naming files that do not exist: {missing}"


def test_bad_files_are_forged_with_valid_checksums():
    """The defects must be caught by validation, not by a CRC: with checksums off every
    bad file still fails, with the very error (type and message) it fails with when they
    are on -- the one its named test expects. (None of them is benign: each holds a
    defect the reader must refuse.)"""
    for name in COVERED:
        path = BAD / name
        failures = []
        for verify in (False, True):
            with pytest.raises(RcfmtError) as info:
                read_everything(path, verify=verify)
            failures.append((type(info.value), str(info.value)))
        unverified, verified = failures
        assert unverified[0] is not ChecksumError, f"{name}: a checksum is wrong: {unverified[1]}"
        assert unverified == verified, f"{name}: fails otherwise with checksums off: {unverified} vs {verified}"


# ---- versions and features
@bad_file("newer_footer_version.rcfmt")
def test_newer_footer_version():
    expect("newer_footer_version.rcfmt", UnsupportedError, "format version 2.*reads up to 1")


@bad_file("newer_header_version.rcfmt")
def test_newer_header_version():
    err = expect("newer_header_version.rcfmt", UnsupportedError, "format version 2 is newer")
    assert "newer_header_version.rcfmt" in str(err)


@bad_file("unknown_required_feature.rcfmt")
def test_unknown_required_feature():
    expect("unknown_required_feature.rcfmt", UnsupportedError, r"requires features.*zorder-v9")


@bad_file("unknown_column_type.rcfmt")
def test_unknown_column_type():
    expect("unknown_column_type.rcfmt", UnsupportedError, "column type 'list' is not supported")


@bad_file("unknown_encoding_id.rcfmt")
def test_unknown_encoding_id():
    expect("unknown_encoding_id.rcfmt", UnsupportedError, "unknown encoding id 99")


@bad_file("page_unknown_codec.rcfmt")
def test_page_unknown_codec():
    expect("page_unknown_codec.rcfmt", UnsupportedError, "compression codec id 9")


@pytest.mark.parametrize("name", ["newer_footer_version.rcfmt", "unknown_required_feature.rcfmt",
                                  "unknown_column_type.rcfmt", "unknown_encoding_id.rcfmt",
                                  "page_unknown_codec.rcfmt"])
def test_unsupported_errors_name_the_file(name):
    with pytest.raises(UnsupportedError) as info:
        read_everything(BAD / name)
    assert name in str(info.value)


# ---- footer JSON
@bad_file("footer_json_not_an_object.rcfmt")
def test_footer_json_not_an_object():
    expect("footer_json_not_an_object.rcfmt", match="footer: JSON is not an object")


@bad_file("footer_json_truncated.rcfmt")
def test_footer_json_truncated():
    expect("footer_json_truncated.rcfmt", match="footer: malformed JSON")


@bad_file("footer_json_length_past_footer.rcfmt")
def test_footer_json_length_past_footer():
    expect("footer_json_length_past_footer.rcfmt", match="JSON length runs past the footer")


@bad_file("footer_json_deeply_nested.rcfmt")
def test_footer_json_deeply_nested():
    expect("footer_json_deeply_nested.rcfmt", match="footer")


@bad_file("footer_json_infinite_number.rcfmt")
def test_footer_json_infinite_number():
    expect("footer_json_infinite_number.rcfmt", match="footer")


@bad_file("duplicate_column_name.rcfmt")
def test_duplicate_column_name():
    expect("duplicate_column_name.rcfmt", match="duplicate column name 'i'")


@bad_file("stat_width_mismatch.rcfmt")
def test_stat_width_mismatch():
    expect("stat_width_mismatch.rcfmt", match="column 'i' has stat_width 4")


# ---- footer: absurd counts
@bad_file("absurd_block_count.rcfmt")
def test_absurd_block_count():
    expect("absurd_block_count.rcfmt", match="table runs past the footer")


@bad_file("absurd_num_rows.rcfmt")
def test_absurd_num_rows():
    expect("absurd_num_rows.rcfmt", match="num_rows disagrees with the blocks")


@bad_file("absurd_block_rows.rcfmt")
def test_absurd_block_rows():
    expect("absurd_block_rows.rcfmt", match="rows", column="i", block=1)


@bad_file("absurd_page_count.rcfmt")
def test_absurd_page_count():
    expect("absurd_page_count.rcfmt", match="more pages than rows", column="r")


@bad_file("absurd_null_count.rcfmt")
def test_absurd_null_count():
    expect("absurd_null_count.rcfmt", match="counts exceed block rows", column="s")


@bad_file("block_rows_overflow.rcfmt")
def test_block_rows_overflow():
    expect("block_rows_overflow.rcfmt", match="block first rows do not follow row counts")


# ---- footer: locations
@bad_file("footer_length_past_start.rcfmt")
def test_footer_length_past_start():
    err = expect("footer_length_past_start.rcfmt", match="footer length .* does not fit")
    assert err.offset is not None


@bad_file("block_offset_past_eof.rcfmt")
def test_block_offset_past_eof():
    expect("block_offset_past_eof.rcfmt", match="block outside the data region")


@bad_file("chunk_offset_past_eof.rcfmt")
def test_chunk_offset_past_eof():
    expect("chunk_offset_past_eof.rcfmt", match="column chunk outside its block", column="d")


@bad_file("chunk_length_wraps.rcfmt")
def test_chunk_length_wraps():
    expect("chunk_length_wraps.rcfmt", match="column chunk outside its block", column="s")


@bad_file("table_offset_past_footer.rcfmt")
def test_table_offset_past_footer():
    expect("table_offset_past_footer.rcfmt", match="table runs past the footer")


@bad_file("negative_table_offset.rcfmt")
def test_negative_table_offset():
    expect("negative_table_offset.rcfmt", match="bad table layout.*-8")


@bad_file("negative_record_size.rcfmt")
def test_negative_record_size():
    expect("negative_record_size.rcfmt", match="bad table layout.*-32")


@bad_file("negative_block_count.rcfmt")
def test_negative_block_count():
    expect("negative_block_count.rcfmt", match="bad table layout.*'count': -1")


@bad_file("negative_page_index_length.rcfmt")
def test_negative_page_index_length():
    expect("negative_page_index_length.rcfmt", match="page index", column="i")


@bad_file("page_index_region_past_eof.rcfmt")
def test_page_index_region_past_eof():
    expect("page_index_region_past_eof.rcfmt", match="page index region outside the file")


@bad_file("dictionary_longer_than_chunk.rcfmt")
def test_dictionary_longer_than_chunk():
    expect("dictionary_longer_than_chunk.rcfmt", match="dictionary page longer than its chunk", column="d")


# ---- page index
@bad_file("page_index_first_row_gap.rcfmt")
def test_page_index_first_row_gap():
    expect("page_index_first_row_gap.rcfmt", match="page index entries are inconsistent", column="i", block=1)


@bad_file("page_index_nulls_over_rows.rcfmt")
def test_page_index_nulls_over_rows():
    expect("page_index_nulls_over_rows.rcfmt", match="page index entries are inconsistent", column="s", block=0)


@bad_file("page_index_length_mismatch.rcfmt")
def test_page_index_length_mismatch():
    expect("page_index_length_mismatch.rcfmt", match="page index length disagrees", column="r", block=0)


@bad_file("page_index_offset_wraps.rcfmt")
def test_page_index_offset_wraps():
    expect("page_index_offset_wraps.rcfmt", match="page index", column="i", block=0)


# ---- chunks
@bad_file("more_pages_than_recorded.rcfmt")
def test_more_pages_than_recorded():
    expect("more_pages_than_recorded.rcfmt", match="more pages than the footer records", column="i", block=1)


@bad_file("page_encoding_differs_from_chunk.rcfmt")
def test_page_encoding_differs_from_chunk():
    expect("page_encoding_differs_from_chunk.rcfmt", match="page encoding 0 differs from its chunk's 2",
           column="r", block=1, page=1)


@bad_file("dictionary_size_mismatch.rcfmt")
def test_dictionary_size_mismatch():
    expect("dictionary_size_mismatch.rcfmt", match="dictionary page size disagrees", column="d", block=1,
           page="dictionary")


@bad_file("nulls_in_non_nullable_column.rcfmt")
def test_nulls_in_non_nullable_column():
    expect("nulls_in_non_nullable_column.rcfmt", match="nulls in a column declared not nullable", column="s",
           block=0)


# ---- page headers
@bad_file("page_rows_larger_than_page.rcfmt")
def test_page_rows_larger_than_page():
    expect("page_rows_larger_than_page.rcfmt",
           match="PLAIN page holds 24 bytes, 13 values|pages hold more than the block's 6 rows", column="i",
           block=1, page=0)


@bad_file("page_validity_flag_without_nulls.rcfmt")
def test_page_validity_flag_without_nulls():
    expect("page_validity_flag_without_nulls.rcfmt", match="validity flag disagrees with null count", column="i",
           block=0, page=1)


@bad_file("page_nulls_without_validity_flag.rcfmt")
def test_page_nulls_without_validity_flag():
    expect("page_nulls_without_validity_flag.rcfmt", match="validity flag disagrees with null count", column="s",
           block=0, page=0)


@bad_file("validity_bitmap_disagrees_with_null_count.rcfmt")
def test_validity_bitmap_disagrees_with_null_count():
    expect("validity_bitmap_disagrees_with_null_count.rcfmt", match="bitmap has 2 nulls, header says 1",
           column="s", block=0, page=0)


@bad_file("page_unknown_type.rcfmt")
def test_page_unknown_type():
    expect("page_unknown_type.rcfmt", match="unknown page type 7", column="r", block=0, page=0)


@bad_file("page_unknown_flags.rcfmt")
def test_page_unknown_flags():
    expect("page_unknown_flags.rcfmt", match="unknown page flags 0x80", column="r", block=0, page=0)


@bad_file("page_body_past_chunk.rcfmt")
def test_page_body_past_chunk():
    expect("page_body_past_chunk.rcfmt", match="runs past the end of its chunk", column="i", block=1, page=1)


@bad_file("page_uncompressed_size_mismatch.rcfmt")
def test_page_uncompressed_size_mismatch():
    expect("page_uncompressed_size_mismatch.rcfmt", match="stored size 24 != uncompressed size 32", column="i",
           block=0, page=0)


# ---- page bodies
@bad_file("plain_offsets_not_monotonic.rcfmt")
def test_plain_offsets_not_monotonic():
    expect("plain_offsets_not_monotonic.rcfmt", match=r"PLAIN page has invalid offsets \(entry 2\)", column="s",
           block=1, page=0)


@bad_file("plain_offsets_past_data.rcfmt")
def test_plain_offsets_past_data():
    expect("plain_offsets_past_data.rcfmt", match="PLAIN page has invalid offsets", column="s", block=0, page=1)


@bad_file("invalid_utf8_in_string.rcfmt")
def test_invalid_utf8_in_string():
    expect("invalid_utf8_in_string.rcfmt", match="UTF-8", column="s", block=0)


@bad_file("decimal_beyond_precision.rcfmt")
def test_decimal_beyond_precision():
    expect("decimal_beyond_precision.rcfmt", match="precision", column="x", block=1)


@bad_file("dictionary_code_out_of_range.rcfmt")
def test_dictionary_code_out_of_range():
    expect("dictionary_code_out_of_range.rcfmt", match=r"dictionary code 200 out of range \(dictionary size 3\)",
           column="d", block=1, page=1)


@bad_file("dictionary_unknown_code_width.rcfmt")
def test_dictionary_unknown_code_width():
    expect("dictionary_unknown_code_width.rcfmt", match="unknown dictionary code layout 3", column="d", block=0,
           page=0)


@bad_file("rle_lengths_do_not_add_up.rcfmt")
def test_rle_lengths_do_not_add_up():
    expect("rle_lengths_do_not_add_up.rcfmt", match="RLE run lengths do not add up", column="r", block=0, page=0)


@bad_file("rle_zero_length_run.rcfmt")
def test_rle_zero_length_run():
    expect("rle_zero_length_run.rcfmt", match="RLE run lengths do not add up", column="r", block=1, page=1)


@bad_file("rle_run_count_absurd.rcfmt")
def test_rle_run_count_absurd():
    expect("rle_run_count_absurd.rcfmt", match="RLE page claims 4294967295 runs for 3 rows", column="r", block=0,
           page=1)


# ---- bloom filters
@bad_file("bloom_length_too_short.rcfmt")
def test_bloom_length_too_short():
    expect("bloom_length_too_short.rcfmt", match="bloom filter outside the bloom filter region", column="i")


@bad_file("bloom_offset_outside_region.rcfmt")
def test_bloom_offset_outside_region():
    expect("bloom_offset_outside_region.rcfmt", match="bloom filter outside the bloom filter region", column="i")


@bad_file("bloom_region_overlaps_page_index.rcfmt")
def test_bloom_region_overlaps_page_index():
    expect("bloom_region_overlaps_page_index.rcfmt", match="bloom filter region overlaps the page index")


@bad_file("bloom_bitset_not_power_of_two.rcfmt")
def test_bloom_bitset_not_power_of_two():
    expect("bloom_bitset_not_power_of_two.rcfmt", match="bloom filter of 48 bytes.*power of two", column="i",
           block=0)


# ---- compressed pages
@bad_file("zstd_garbage_body.rcfmt")
def test_zstd_garbage_body():
    # zstd frames carry no content checksum: garbage may decompress, the decoder then refuses it
    expect("zstd_garbage_body.rcfmt", match="zstd decompression failed|PLAIN page", column="s", block=0, page=0)


@bad_file("lz4_uncompressed_size_mismatch.rcfmt")
def test_lz4_uncompressed_size_mismatch():
    expect("lz4_uncompressed_size_mismatch.rcfmt", match="lz4", column="s", block=1, page=1)


@bad_file("zstd_claims_huge_page.rcfmt")
def test_zstd_claims_huge_page():
    expect("zstd_claims_huge_page.rcfmt", match="zstd page of 33 bytes claims 2147483647 bytes uncompressed",
           column="s", block=1, page=0)


@bad_file("encoding_cannot_hold_type.rcfmt")
def test_encoding_cannot_hold_type():
    """Caught when the footer is read, before any page: not a TypeError from a decoder."""
    expect("encoding_cannot_hold_type.rcfmt", match="chunk encoding id 5 cannot hold int64 values", column="i",
           block=0)
    with pytest.raises(CorruptFileError, match="cannot hold"):
        rcfmt.open(BAD / "encoding_cannot_hold_type.rcfmt")


@bad_file("block_rows_with_agreeing_page_counts.rcfmt")
def test_block_rows_with_agreeing_page_counts():
    """Each page needs a 32-byte header, so a chunk's bytes bound its page count, and the
    page count bounds its rows: 2^40 rows in a few hundred bytes is refused at open."""
    expect("block_rows_with_agreeing_page_counts.rcfmt", match="more pages than the chunk's bytes can hold",
           column="i", block=1)


@bad_file("rows_without_columns.rcfmt")
def test_rows_without_columns():
    expect("rows_without_columns.rcfmt", match="a block has rows but the file has no columns", block=0)


@bad_file("lz4_claims_huge_page.rcfmt")
def test_lz4_claims_huge_page():
    expect("lz4_claims_huge_page.rcfmt", match="lz4 page of 19 bytes claims 2147483647 bytes uncompressed",
           column="i", block=0, page=0)


def test_huge_page_claims_do_not_allocate_gigabytes():
    """A 4 KB file claiming a 2 GiB page must fail cleanly even where memory is scarce."""
    script = textwrap.dedent("""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        import rcfmt
        for name in sys.argv[1:]:
            try:
                rcfmt.read_table(name, use_threads=False)
            except rcfmt.CorruptFileError as exc:
                print("ok", exc)
            else:
                print("NO ERROR", name)
    """)
    files = [str(BAD / "zstd_claims_huge_page.rcfmt"), str(BAD / "lz4_claims_huge_page.rcfmt")]
    proc = subprocess.run([sys.executable, "-c", script, *files], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("ok ") == 2, proc.stdout


# ============================================================================ forged on the fly
def test_corrupt_error_fields_survive_nesting(tmp_path):
    """Context added by inner layers (page, offset) is kept when outer layers add theirs."""
    err = None
    with pytest.raises(CorruptFileError) as info:
        read_everything(BAD / "rle_lengths_do_not_add_up.rcfmt")
    err = info.value
    assert (err.column, err.block, err.page) == ("r", 0, 0)
    assert isinstance(err.offset, int) and err.offset > 8
    # the offset is where the page starts: its header parses there
    raw = (BAD / "rle_lengths_do_not_add_up.rcfmt").read_bytes()
    assert raw[err.offset] == 0 and raw[err.offset + 1] == 2  # data page, RLE


def test_read_of_other_columns_still_works_when_one_is_damaged():
    """Damage is local: columns and blocks not touched by the defect still read."""
    with rcfmt.open(BAD / "rle_lengths_do_not_add_up.rcfmt") as f:
        got = f.read(columns=["i", "s", "d", "x"])
        assert got.num_rows == 12
        assert f.read_block(1).num_rows == 6
        with pytest.raises(CorruptFileError):
            f.read_block(0)


def test_page_checksums_checked_only_when_asked(tmp_path):
    """verify_checksums=False skips body CRCs (and the footer's) but not structure checks."""
    path, table = _flip_file(tmp_path, "none")
    data = bytearray(path.read_bytes())
    with rcfmt.open(path) as f:
        e = f.page_index(0, f.column_index("f"))[0]  # PLAIN float64 page, no nulls
    body = int(e["offset"]) + 32
    data[body: body + 8] = np.float64(123.5).tobytes()
    damaged = tmp_path / "d.rcfmt"
    damaged.write_bytes(data)
    with pytest.raises(ChecksumError, match="page body checksum") as info:
        rcfmt.read_table(damaged)
    assert (info.value.column, info.value.block, info.value.page) == ("f", 0, 0)
    got = rcfmt.read_table(damaged, verify_checksums=False)  # silently different, as asked
    assert got.column("f")[0].as_py() == 123.5
