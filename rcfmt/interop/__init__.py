"""rcfmt and other libraries' objects:

- :mod:`rcfmt.interop.arrow`: Arrow data in and out through the PyCapsule interface
  (what rcfmt accepts as a table, the stream a scan exports); needs pyarrow alone, so
  every layer may use it;
- :mod:`rcfmt.interop.cdata`: what pyarrow's Python API cannot hand over, through the
  Arrow C data interface (tables of month/day_time intervals relabeled to and from their
  storage types, C++ extension types' metadata); pyarrow and ctypes alone, like ``arrow``;
- :mod:`rcfmt.interop.pandas_io` (public as ``rcfmt.pandas_io``): DataFrames in and out;
- :mod:`rcfmt.interop.polars` (public as ``rcfmt.polars``): a Polars lazy source.

``pandas_io`` and ``polars`` sit on top: they use the public API (files, datasets,
expressions) and nothing below imports them.
"""
