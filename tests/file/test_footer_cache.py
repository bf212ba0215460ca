"""The process-wide footer cache holds what it says: its bound in bytes covers the footers
it keeps and what scans derive from them and keep with them (projections' schemas)."""
from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt.file import footer_cache, page_index_cache


@pytest.fixture
def small_cache(monkeypatch):
    cache = footer_cache.FooterCache(1 << 20)
    monkeypatch.setattr(footer_cache, "FOOTERS", cache)
    import rcfmt.file.reader as reader

    if hasattr(reader, "FOOTERS"):
        monkeypatch.setattr(reader, "FOOTERS", cache)
    return cache


def test_what_the_footer_cache_keeps_alive_is_within_its_bound(tmp_path, small_cache):
    """16 data files of 60 columns, read with 32 projections (a loader's or a BI tool's):
    the footers and their derived values freed with the cache weigh about what it
    counted (12x before: each footer kept up to 64 projections' schemas, uncounted)."""
    root = tmp_path / "ds"
    for i in range(16):
        rcfmt.write_dataset(pa.table({f"c{j}": np.arange(200) + i for j in range(60)}), root)
    page_index_cache.SHARED.clear()
    ds = rcfmt.dataset(root)
    tracemalloc.start()
    try:
        rng = np.random.default_rng(0)
        for _ in range(32):
            ds.read(columns=[f"c{j}" for j in sorted(rng.choice(60, 40, replace=False))])
        page_index_cache.SHARED.clear()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        counted = small_cache._bytes
        small_cache.clear()
        gc.collect()
        freed = held - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert 0 < counted <= small_cache.max_bytes
    assert freed <= 1.5 * counted, (freed, counted)
