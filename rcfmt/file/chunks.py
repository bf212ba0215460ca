"""Decode the pages of one column chunk from the bytes read from a file.

All functions raise :class:`CorruptFileError` without file location; the reader adds
file, column and block, and these functions add the page and its offset.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..encodings import by_id
from ..encodings.base import ColumnValues
from ..encodings.dictionary import decode_codes, take
from ..encodings.plain import decode_plain
from ..errors import CorruptFileError
from ..format.layout import PAGE_DATA, PAGE_DICTIONARY
from ..format.page import PageHeader, page_body, parse_page_header, split_validity
from ..types import LogicalType, PhysicalKind
from .arrow_io import concat_values

__all__ = ["DecodedPage", "ChunkDecoder"]


@dataclass
class DecodedPage:
    """One decoded data page: values, or dictionary codes when decoded with codes=True."""

    values: ColumnValues | None
    valid: np.ndarray | None  # None: no nulls
    rows: int
    codes: np.ndarray | None = None


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
        self._dictionary: ColumnValues | None = dictionary

    @property
    def is_dictionary(self) -> bool:
        return int(self.record["dictionary_length"]) > 0

    # ------------------------------------------------------------------ pages
    def _header(self, pos: int, page: int | None) -> PageHeader:
        try:
            return parse_page_header(self.buf, pos)
        except CorruptFileError as exc:
            raise exc.with_context(page=page, offset=self.base + pos) from None

    @property
    def dictionary(self) -> ColumnValues | None:
        """The chunk's decoded dictionary (DICTIONARY encoding), else None."""
        length = int(self.record["dictionary_length"])
        if self._dictionary is None and length:
            pos = int(self.record["offset"]) - self.base
            try:
                h = parse_page_header(self.buf, pos)
                if h.page_type != PAGE_DICTIONARY or h.total_size != length:
                    raise CorruptFileError("dictionary page does not match its footer record")
                if h.row_count != int(self.record["dictionary_size"]) or h.null_count:
                    raise CorruptFileError("dictionary page size disagrees with the footer")
                body = page_body(self.buf, pos, h, self.verify)
                self._dictionary = decode_plain(body, h.row_count, self.ltype)
            except CorruptFileError as exc:
                raise exc.with_context(page="dictionary", offset=self.base + pos) from None
        return self._dictionary

    def _page_parts(self, pos: int, page: int, expected_rows: int | None = None):
        """Header, validity and the encoded values body of the data page at ``pos``."""
        h = self._header(pos, page)
        try:
            if h.page_type != PAGE_DATA:
                raise CorruptFileError("expected a data page")
            if h.encoding != self.encoding.id:
                raise CorruptFileError(f"page encoding {h.encoding} differs from its chunk's {self.encoding.id}")
            if expected_rows is not None and h.row_count != expected_rows:
                raise CorruptFileError(f"page holds {h.row_count} rows, page index says {expected_rows}")
            body = page_body(self.buf, pos, h, self.verify)
            valid, values_body = split_validity(body, h)
        except CorruptFileError as exc:
            raise exc.with_context(page=page, offset=self.base + pos) from None
        return h, valid, values_body

    def decode_fixed_into(self, rows: int) -> tuple[ColumnValues, np.ndarray | None]:
        """Decode every page of a non-dictionary FIXED chunk into one preallocated array."""
        out = np.empty(rows, dtype=self.ltype.numpy_dtype)
        pos = int(self.record["offset"]) - self.base
        end = pos + int(self.record["length"])
        valids, row, page = [], 0, 0
        while pos < end:
            if page >= int(self.record["page_count"]):
                raise CorruptFileError("more pages than the footer records", offset=self.base + pos)
            h, valid, values_body = self._page_parts(pos, page)
            if row + h.row_count > rows:
                raise CorruptFileError(f"chunk pages hold more than the block's {rows} rows", page=page)
            try:
                self.encoding.decode_into(values_body, h.row_count, self.ltype, out[row : row + h.row_count])
            except CorruptFileError as exc:
                raise exc.with_context(page=page, offset=self.base + pos) from None
            valids.append((row, h.row_count, valid))
            row += h.row_count
            pos += h.total_size
            page += 1
        if pos != end or page != int(self.record["page_count"]) or row != rows:
            raise CorruptFileError(f"chunk pages hold {row} rows in {page} pages, footer says {rows} rows in "
                                   f"{int(self.record['page_count'])} pages")
        if all(v is None for _, _, v in valids):
            return ColumnValues(out), None
        valid = np.ones(rows, bool)
        for start, n, v in valids:
            if v is not None:
                valid[start : start + n] = v
        return ColumnValues(out), valid

    def decode_page(self, pos: int, page: int, expected_rows: int | None = None,
                    codes: bool = False) -> tuple[DecodedPage, int]:
        """Decode the data page at ``buf[pos]``; return it and the position after it.

        With ``codes=True`` a dictionary-encoded page yields its codes, not values."""
        h, valid, values_body = self._page_parts(pos, page, expected_rows)
        try:
            if codes and self.is_dictionary:
                dictionary = self.dictionary
                page_codes = decode_codes(values_body, h.row_count, len(dictionary))
                return DecodedPage(None, valid, h.row_count, page_codes), pos + h.total_size
            values = self.encoding.decode(values_body, h.row_count, self.ltype, self.dictionary)
            if len(values) != h.row_count:
                raise CorruptFileError("decoded value count differs from the page's row count")
        except CorruptFileError as exc:
            raise exc.with_context(page=page, offset=self.base + pos) from None
        return DecodedPage(values, valid, h.row_count), pos + h.total_size

    def decode_all(self, rows: int) -> tuple[ColumnValues, np.ndarray | None]:
        """Decode every data page in order; check they add up to ``rows``."""
        if self.ltype.kind == PhysicalKind.FIXED and not self.is_dictionary:
            return self.decode_fixed_into(rows)
        pos = int(self.record["offset"]) - self.base + int(self.record["dictionary_length"])
        end = int(self.record["offset"]) - self.base + int(self.record["length"])
        pages = []
        seen = 0
        while pos < end:
            if len(pages) >= int(self.record["page_count"]):
                raise CorruptFileError("more pages than the footer records", offset=self.base + pos)
            page, pos = self.decode_page(pos, len(pages), codes=True)
            if pos > end:
                raise CorruptFileError("page runs past the end of its chunk", page=len(pages))
            pages.append(page)
            seen += page.rows
        if len(pages) != int(self.record["page_count"]) or seen != rows:
            raise CorruptFileError(f"chunk pages hold {seen} rows in {len(pages)} pages, footer says {rows} rows "
                                   f"in {int(self.record['page_count'])} pages")
        return assemble(pages, self.ltype, self.dictionary)


def assemble(pages: list[DecodedPage], ltype: LogicalType, dictionary: ColumnValues | None = None
             ) -> tuple[ColumnValues, np.ndarray | None]:
    """Concatenate decoded pages into one run of values plus validity. Pages decoded
    as dictionary codes are concatenated as codes and materialized with one take."""
    if not pages:  # a zero-row block
        return decode_plain(b"\0\0\0\0" if ltype.kind == PhysicalKind.VARBINARY else b"", 0, ltype), None
    if pages[0].codes is not None:
        codes = pages[0].codes if len(pages) == 1 else np.concatenate([p.codes for p in pages])
        values = take(dictionary, codes, ltype)
    else:
        values = concat_values([p.values for p in pages], ltype.kind, ltype.large)
    if all(p.valid is None for p in pages):
        return values, None
    valid = np.concatenate([p.valid if p.valid is not None else np.ones(p.rows, bool) for p in pages])
    return values, valid
