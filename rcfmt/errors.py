"""rcfmt's exception hierarchy.

Every error rcfmt raises on purpose derives from :class:`RcfmtError`, so callers can
catch one type. Errors about damaged input carry where it was found.
"""
from __future__ import annotations

__all__ = [
    "RcfmtError",
    "CorruptFileError",
    "ChecksumError",
    "UnsupportedError",
    "SchemaError",
    "InvalidDataError",
    "UnknownOptionError",
    "InvalidOptionError",
    "RowIndexError",
    "FilterError",
    "CommitConflictError",
    "StorageError",
]


class RcfmtError(Exception):
    """Base class of all errors raised by rcfmt."""


class CorruptFileError(RcfmtError):
    """The bytes of a file do not follow the format (truncated, damaged, forged).

    ``path``, ``column``, ``block``, ``page`` and ``offset`` say where, when known;
    they are also part of the message.
    """

    def __init__(self, message: str, *, path=None, column=None, block=None, page=None, offset=None):
        self.reason = message
        self.path = None if path is None else str(path)
        self.column = column
        self.block = block
        self.page = page
        self.offset = offset
        where = [
            f"{name}={value!r}" if name == "column" else f"{name}={value}"
            for name, value in (
                ("file", self.path), ("column", column), ("block", block),
                ("page", page), ("offset", offset),
            )
            if value is not None
        ]
        super().__init__(f"{message} ({', '.join(where)})" if where else message)

    def with_context(self, **context) -> "CorruptFileError":
        """Return a copy of this error with missing location fields filled in."""
        fields = dict(path=self.path, column=self.column, block=self.block, page=self.page, offset=self.offset)
        for key, value in context.items():
            if fields.get(key) is None:
                fields[key] = value
        return type(self)(self.reason, **fields)


class ChecksumError(CorruptFileError):
    """Stored bytes do not match their checksum."""


class UnsupportedError(RcfmtError):
    """Valid input that this version of rcfmt cannot handle (newer format, unknown type)."""


class SchemaError(RcfmtError, ValueError):
    """A schema or column reference is invalid (unknown column, unsupported type, mismatch)."""


class InvalidDataError(RcfmtError, ValueError):
    """Data given to a writer holds values its type cannot hold, which a reader would
    refuse (what rcfmt writes, rcfmt reads back): ill-formed UTF-8 in a string, a decimal
    beyond its declared precision, offsets of a string, binary or list column that go
    backwards, list views outside their values. Nothing is written at the target.

    Not a :class:`SchemaError`: the schema is fine, values are not. A ValueError, as
    Arrow's own ``ArrowInvalid`` for the same values is. ``column`` (the stored column:
    a nested leaf by its dotted path) and ``row`` (the first bad row of the data passed
    to the call that raised) say where; both are in the message too."""

    def __init__(self, message: str, *, column: str | None = None, row: int | None = None):
        self.reason = message
        self.column = column
        self.row = row
        where = ", ".join(f"{k}={v!r}" for k, v in (("column", column), ("row", row)) if v is not None)
        super().__init__(f"{message} ({where})" if where else message)


class InvalidOptionError(RcfmtError, ValueError):
    """An option has an invalid value."""


class UnknownOptionError(InvalidOptionError, TypeError):
    """An option rcfmt does not know (a misspelt keyword): a TypeError too, as Python
    raises for an unexpected keyword argument."""


class RowIndexError(RcfmtError, IndexError):
    """A row position outside the rows addressed (negative, or at or past their count):
    an IndexError too, as Python raises for a list. ``position`` is the first bad one
    and ``index`` where it stands in what was passed; both are in the message."""

    def __init__(self, message: str, *, position: int | None = None, index: int | None = None):
        self.position = position
        self.index = index
        super().__init__(message)


class FilterError(RcfmtError, ValueError):
    """A filter expression is malformed or does not fit the schema."""


class CommitConflictError(RcfmtError):
    """A dataset commit lost against a concurrent commit that it cannot be reconciled with
    (an overwrite whose base version is no longer the latest, or an append whose schema no
    longer matches). Nothing of the losing commit became visible; its data files are removed."""


class StorageError(RcfmtError, OSError):
    """Reading or writing a file on object storage failed after the client's own bounded
    retries (a server error, a reset connection, a timeout), or a local file system
    refused a write (disk full, file too large: ``errno`` says which); the message names
    the file and what was being done. Also an OSError, as the client's error was."""
