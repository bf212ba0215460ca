"""The skipping indexes of a file, one subpackage or module per index, each holding the
index's bytes, its builder and its evaluator side by side:

- :mod:`rcfmt.index.bloom`: split-block bloom filters -- :mod:`~rcfmt.index.bloom.sbbf`
  (the filter: bitset layout, hashing, probing one value) and
  :mod:`~rcfmt.index.bloom.chunks` (the file's per-chunk filters: which chunks get one,
  their stored form with its crc, reading them back and probing ``==``/``isin`` leaves);
- :mod:`rcfmt.index.bitmap`: bitmap indexes -- :mod:`~rcfmt.index.bitmap.layout` (the
  bytes: bitmaps, entries, directory), :mod:`~rcfmt.index.bitmap.build` (which chunks get
  which kind, entry bytes) and :mod:`~rcfmt.index.bitmap.answer` (a predicate answered
  from a block's entries);
- :mod:`rcfmt.index.page`: the page index as a scan keeps it per chunk.

The rule (docs/ARCHITECTURE.md): each index owns its layout. The bytes of an index are
defined in its own module here, not in :mod:`rcfmt.format`; ``format`` knows the file's
frame (header, blocks, chunk and page records, footer) and refers to an index module
for that index's records. Nothing in this package imports :mod:`rcfmt.file` or
:mod:`rcfmt.scan`'s scanner; the evaluators use the bound predicate nodes of
:mod:`rcfmt.predicate.nnf`.
"""
