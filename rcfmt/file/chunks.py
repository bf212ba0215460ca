"""The reference decoder: the pages of one column chunk, from the bytes read from a file.

Scans decode through the block executor (:mod:`rcfmt._native.block`); this decoder
explains what the executor refuses (:mod:`rcfmt.scan.refusals`), and backs
:meth:`RcfmtFile.read_column_chunk <rcfmt.file.reader.RcfmtFile.read_column_chunk>` and
the CLI's checks.

Every page goes through the native page pipeline (:mod:`rcfmt._native.pages`): one
GIL-free call parses and checks the headers of a run of pages, verifies their
checksums, decompresses them and gathers their validity; a second decodes the values
of every page of the run straight into one output: an array (PLAIN, RLE, BITPACK,
DELTA, ALP, bools), uint32 codes (DICTIONARY), or offsets + data (PLAIN and
DELTA_LENGTH strings/binary). There is no per-page Python.

All methods raise :class:`CorruptFileError` located at the page (number and offset);
the reader adds file, column and block.
"""
from __future__ import annotations

import functools

import numpy as np

from ..runtime import memory
from .._native import decoders as _decoders
from .._native import pages as _pages
from .._native import validate as _validate
from ..encodings import by_id
from ..encodings.base import ColumnValues
from ..encodings.dictionary import decode_codes, take
from ..encodings.plain import decode_plain
from ..errors import CorruptFileError
from ..schema.arrow_io import Bitmap
from ..format.layout import MAX_PAGE_ROWS, PAGE_DATA, PAGE_DICTIONARY
from ..schema.types import LogicalType, PhysicalKind

__all__ = ["ChunkDecoder"]

_PLAIN, _DICTIONARY, _RLE, _BITPACK, _DELTA, _ALP, _DELTA_LENGTH, _BYTE_SPLIT, _ALP_SPLIT = range(9)
_I32_MAX = (1 << 31) - 1
#: the most a footer's estimate may make the pipeline allocate before any header is read
ARENA_HINT_MAX = 256 << 20


@functools.lru_cache(maxsize=1024)
def _native_mode(encoding_id: int, ltype: LogicalType):
    """``(mode, itemsize, signed)`` of the values kernel for this encoding and type
    (None: DICTIONARY, or strings/binary, which have kernels of their own)."""
    if ltype.kind == PhysicalKind.BOOL:
        return (_decoders.MODE_BOOL_PLAIN if encoding_id == _PLAIN else _decoders.MODE_BOOL_RLE), 1, False
    if ltype.kind != PhysicalKind.FIXED or encoding_id == _DICTIONARY:
        return None
    if encoding_id == _PLAIN:
        return _decoders.MODE_PLAIN, ltype.width, False
    if encoding_id == _RLE:
        return _decoders.MODE_RLE, ltype.width, False
    if encoding_id == _ALP:
        return _decoders.MODE_ALP, ltype.width, False
    if encoding_id == _ALP_SPLIT:
        return _decoders.MODE_ALP_SPLIT, ltype.width, False
    if encoding_id == _BYTE_SPLIT:
        return _decoders.MODE_SPLIT, ltype.width, ltype.is_signed
    if encoding_id == _BITPACK and ltype.name == "decimal128":
        return _decoders.MODE_BITPACK_DECIMAL, 8, True
    mode = _decoders.MODE_BITPACK if encoding_id == _BITPACK else _decoders.MODE_DELTA
    return mode, ltype.width, ltype.is_signed


class ChunkDecoder:
    """Decodes the pages of one column chunk held in ``buf`` (bytes from ``base`` on).

    ``record`` is the chunk's footer record. The dictionary page, if any, is decoded
    once, on first use.
    """

    def __init__(self, buf, base: int, record, ltype: LogicalType, verify: bool = True,
                 dictionary: ColumnValues | None = None):
        self.buf = buf
        self.base = base  # file offset of buf[0]
        self.record = record
        self.ltype = ltype
        self.verify = verify
        self.encoding = by_id(int(record["encoding"]))
        if not self.encoding.supports(ltype):
            raise CorruptFileError(f"chunk encoding {self.encoding.name.upper()} cannot hold {ltype.name} values")
        self.is_dictionary = int(record["dictionary_length"]) > 0
        if self.encoding.id == _DICTIONARY and not self.is_dictionary:
            raise CorruptFileError("dictionary-encoded chunk has no dictionary page")
        if self.is_dictionary and self.encoding.id != _DICTIONARY:
            raise CorruptFileError(f"{self.encoding.name.upper()} chunk has a dictionary page")
        self._mode = _native_mode(self.encoding.id, ltype)
        self._dictionary: ColumnValues | None = dictionary

    # ------------------------------------------------------------------ dictionary
    @property
    def dictionary(self) -> ColumnValues | None:
        """The chunk's decoded dictionary (DICTIONARY encoding), else None."""
        if self._dictionary is not None:
            return self._dictionary
        length = int(self.record["dictionary_length"])
        if length:
            pos = int(self.record["offset"]) - self.base
            run = _pages.read_pages(self.buf, self.base, positions=[pos], max_rows=MAX_PAGE_ROWS,
                                    page_type=PAGE_DICTIONARY, verify=self.verify)
            try:
                if run.end != pos + length:
                    raise CorruptFileError("dictionary page does not match its footer record")
                if run.rows != int(self.record["dictionary_size"]) or run.null_count:
                    raise CorruptFileError("dictionary page size disagrees with the footer")
                dictionary = decode_plain(run.body(0), run.rows, self.ltype)
                row = self._invalid_row(dictionary)
                if row >= 0:
                    raise CorruptFileError(f"{self._invalid_what()} (dictionary entry {row})")
                self._dictionary = dictionary
            except CorruptFileError as exc:
                raise exc.with_context(page="dictionary", offset=self.base + pos) from None
        return self._dictionary

    # ------------------------------------------------------------------ runs of pages
    def _arena_hint(self, stored: int, pages: int) -> int:
        """Bytes the decompressed bodies of ``pages`` pages holding ``stored`` bytes
        likely take (the chunk's own ratio, a little spare; at most 64x the stored bytes
        and ``ARENA_HINT_MAX``, so a forged footer cannot make us allocate much): the
        page pipeline then runs in one GIL-free section when they fit, and allocates
        between its passes, exactly what the checked headers need, when not."""
        rec = self.record
        if int(rec["compression"]) == 0:
            return 16
        length = max(int(rec["length"]), 1)
        estimate = stored * int(rec["uncompressed_size"]) // length + stored // 8 + 16 * pages + 64
        return min(estimate, 64 * stored + 64, ARENA_HINT_MAX)

    def _read_run(self, rows: int, **where):
        """The pages ``where`` says (see :func:`rcfmt._native.pages.read_pages`), holding at
        most ``rows`` rows, through the pipeline, their values decoded in the same native
        call where a kernel exists: ``(run, values)``, values None for strings/binary
        (decoded afterwards, from the run)."""
        out, spec = None, None
        if self.is_dictionary:
            limit = int(self.record["dictionary_size"])  # the dictionary page is checked to hold as many
            out = memory.empty(rows, np.uint32)
            spec = (_decoders.MODE_CODES, 4, False, out, limit, 0)
        elif self._mode is not None:
            mode, itemsize, signed = self._mode
            # BITPACK decimals stay int64 low words ("narrow" decimals): comparisons run on
            # them, and rcfmt.schema.arrow_io widens them when it builds Arrow arrays
            dtype = np.dtype(np.int64) if mode == _decoders.MODE_BITPACK_DECIMAL else self.ltype.numpy_dtype
            out = memory.empty(rows, dtype)
            spec = (mode, itemsize, signed, out, 0, self.ltype.precision or 0)
        run = _pages.read_pages(self.buf, self.base, max_rows=rows, page_type=PAGE_DATA, encoding=self.encoding.id,
                                verify=self.verify, values=spec, **where)
        if spec is not None and run.bad >= 0:
            self._describe(run, run.bad, spec[4])
        return run, (None if out is None else out[: run.rows])

    def _whole_run(self, rows: int):
        """Every data page of the chunk through the pipeline, counts checked against the
        footer: ``(run, values)`` as :meth:`_read_run`."""
        rec = self.record
        start = int(rec["offset"]) - self.base + int(rec["dictionary_length"])
        end = int(rec["offset"]) - self.base + int(rec["length"])
        pages = int(rec["page_count"])
        if not 0 <= start <= end <= len(self.buf):
            raise CorruptFileError(f"chunk [{start + self.base}, {end + self.base}) lies outside the bytes read")
        run, values = self._read_run(rows, start=start, end=end, max_pages=pages,
                                     arena_hint=self._arena_hint(end - start, pages))
        if run.count != pages or run.rows != rows:
            raise CorruptFileError(f"chunk pages hold {run.rows} rows in {run.count} pages, footer says {rows} rows "
                                   f"in {pages} pages")
        return run, values

    def _values(self, run, decoded, codes: bool):
        """The values (or, for a dictionary chunk with ``codes``, the uint32 codes) of
        every page of ``run``, one array for the whole run, from what the pipeline
        decoded (``decoded``, None for strings/binary)."""
        if self.is_dictionary:
            dictionary = self.dictionary  # decoded and checked to hold the size the codes were checked against
            return decoded if codes else take(dictionary, decoded, self.ltype)
        if decoded is not None:  # fixed-width values and bools
            values = ColumnValues(decoded)
            if self._mode[0] in (_decoders.MODE_PLAIN, _decoders.MODE_RLE):
                self._check_valid(values, run)
            return values  # BITPACK decimals are checked in the kernel
        return self._native_varbinary(run)

    def _native_varbinary(self, run) -> ColumnValues:
        """Strings/binary of every page of the run, into one offsets and one data buffer."""
        capacity = int(run.pages[:, 5].sum()) if run.count else 0
        large = self.ltype.large or capacity > _I32_MAX
        offsets = memory.empty(run.rows + 1, np.int64 if large else np.int32)
        data = memory.empty(capacity, np.uint8)
        mode = _decoders.VB_PLAIN if self.encoding.id == _PLAIN else _decoders.VB_DELTA_LENGTH
        bad, size = _pages.decode_varbinary(run, mode, offsets, data)
        if bad >= 0:
            self._describe(run, bad)
        values = ColumnValues(data[:size], offsets)
        self._check_valid(values, run)
        return values

    def _describe(self, run, bad: int, limit: int = 0):
        """Raise the error of page ``bad``, whose values a native kernel refused: the
        kernel only says which page failed, the encoding's decoder says why."""
        rows = int(run.pages[bad, 1])
        try:
            if self.is_dictionary:
                decode_codes(run.body(bad), rows, limit)
            else:
                row = self._invalid_row(self.encoding.decode(run.body(bad), rows, self.ltype))
                if row >= 0:
                    raise CorruptFileError(f"{self._invalid_what()} (row {row} of the page)")
            raise CorruptFileError(f"{self.encoding.name.upper()} page values fail their checks")
        except CorruptFileError as exc:
            raise self._at(exc, run, bad) from None

    # ------------------------------------------------------------------ valid Arrow
    def _invalid_row(self, values: ColumnValues) -> int:
        """First value Arrow's full validation would refuse (ill-formed UTF-8 in a
        string, a decimal beyond its precision), or -1."""
        name = self.ltype.name
        if name == "string":
            return _validate.utf8_invalid_row(values.values, values.offsets)
        if name == "decimal128":
            return _validate.decimal_invalid_row(np.ascontiguousarray(values.values), self.ltype.precision)
        return -1

    def _invalid_what(self) -> str:
        if self.ltype.name == "string":
            return "ill-formed UTF-8 in a string value"
        return f"decimal value beyond the declared precision {self.ltype.precision}"

    def _check_valid(self, values: ColumnValues, run) -> None:
        row = self._invalid_row(values)
        if row < 0:
            return
        k = int(np.searchsorted(run.pages[:, 3], row, side="right")) - 1
        exc = CorruptFileError(f"{self._invalid_what()} (row {row - int(run.pages[k, 3])} of the page)")
        raise self._at(exc, run, k)

    def _at(self, exc: CorruptFileError, run, k: int) -> CorruptFileError:
        return exc.with_context(page=run.page_number(k), offset=self.base + int(run.pages[k, 0]))

    # ------------------------------------------------------------------ public
    def decode_all(self, rows: int, codes: bool = False) -> tuple[ColumnValues, Bitmap | None]:
        """Decode every data page (checked to add up to ``rows``): values and validity,
        the Arrow bitmap the pipeline wrote (None without nulls); the uint32 codes of a
        dictionary chunk instead of values with ``codes``."""
        run, decoded = self._whole_run(rows)
        bitmap = None if run.validity is None else Bitmap(run.validity, run.rows, run.null_count)
        return self._values(run, decoded, codes), bitmap

    def decode_run(self, positions, page_numbers, expected_rows, codes: bool = False, expected_lengths=None):
        """Decode the data pages whose headers are at ``positions`` in ``buf`` (their
        numbers in the chunk and the page index's row counts given, and its byte lengths
        when only the pages' own bytes were read) in one run: ``(values, valid)``, the
        pages' rows back to back. ``values`` is a :class:`ColumnValues`, or the uint32
        codes of a dictionary chunk with ``codes``; ``valid`` a bool per row, or None."""
        expected = np.asarray(expected_rows, dtype=np.int64)
        stored = int(np.sum(expected_lengths)) if expected_lengths is not None else len(self.buf)
        run, decoded = self._read_run(int(expected.sum()), positions=positions, expected_rows=expected,
                                      expected_lengths=expected_lengths, page_numbers=page_numbers,
                                      arena_hint=self._arena_hint(stored, len(expected)))
        return self._values(run, decoded, codes), run.valid()
