"""rcfmt and other libraries' objects:

- :mod:`rcfmt.interop.arrow`: Arrow data in and out through the PyCapsule interface
  (what rcfmt accepts as a table, the stream a scan exports); needs pyarrow alone, so
  every layer may use it;
- :mod:`rcfmt.interop.pandas_io` (public as ``rcfmt.pandas_io``): DataFrames in and out;
- :mod:`rcfmt.interop.polars` (public as ``rcfmt.polars``): a Polars lazy source.

``pandas_io`` and ``polars`` sit on top: they use the public API (files, datasets,
expressions) and nothing below imports them.
"""
