"""rcfmt's bitmap containers (docs/FORMAT.md §6b) against Roaring (pyroaring, CRoaring's
portable serialization) on the bitmaps a lineitem block's indexes hold: size, and the
time to turn three serialized bitmaps into the rows of their intersection (what a
3-column conjunction costs per block), in one run.

    pip install pyroaring && python bench/bench_bitmap_codec.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # run from a checkout
from rcfmt._native import bitmaps as native  # noqa: E402
from rcfmt.index.bitmap.layout import encode_mask, words  # noqa: E402

ROWS = 131_072


def cases(rng) -> dict[str, list[np.ndarray]]:
    """Three masks per case, as three conjuncts' bitmaps."""
    return {
        "dense 1/2, 1/4, 1/7 (low-cardinality equality)": [rng.random(ROWS) < p for p in (1 / 2, 1 / 4, 1 / 7)],
        "bit slices (random, 1/2)": [rng.random(ROWS) < 0.5 for _ in range(3)],
        "sparse 1/100": [rng.random(ROWS) < 0.01 for _ in range(3)],
        "runs (clustered: 8 runs each)": [np.repeat(rng.random(16) < 0.5, ROWS // 16) for _ in range(3)],
    }


def ours(blobs: list[bytes]) -> int:
    out = None
    for blob in blobs:
        w = np.zeros(words(ROWS), np.uint64)
        buf = np.frombuffer(blob, np.uint8)
        records = np.empty((1, 3), np.int64)
        native.locate(buf, 0, 1, ROWS, records)
        native.union_into(buf, records, ROWS, w)
        out = w if out is None else out & w
    return native.popcount(out)


def roaring(blobs: list[bytes]) -> int:
    from pyroaring import BitMap

    out = None
    for blob in blobs:
        b = BitMap.deserialize(blob)
        out = b if out is None else out & b
    return len(out)


def best(fn, repeat=200) -> float:
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        times.append((time.perf_counter() - t0) / repeat)
    return min(times)


def main() -> int:
    from pyroaring import BitMap

    rng = np.random.default_rng(0)
    print("| bitmaps (131,072 rows) | rcfmt bytes | Roaring bytes | rcfmt AND of 3 | Roaring AND of 3 | time ratio |")
    print("| :--- | ---: | ---: | ---: | ---: | ---: |")
    for name, masks in cases(rng).items():
        mine = [encode_mask(m) for m in masks]
        theirs = [BitMap(np.flatnonzero(m).astype(np.uint32)).serialize() for m in masks]
        for b in theirs:
            BitMap.deserialize(b).run_optimize()
        theirs = [(lambda bm: (bm.run_optimize(), bm.serialize())[1])(BitMap.deserialize(b)) for b in theirs]
        assert ours(mine) == roaring(theirs) == int(np.logical_and.reduce(masks).sum())
        t_ours, t_theirs = best(lambda: ours(mine)), best(lambda: roaring(theirs))
        print(f"| {name} | {sum(map(len, mine)):,} | {sum(map(len, theirs)):,} | {t_ours * 1e6:.1f} µs | "
              f"{t_theirs * 1e6:.1f} µs | {t_theirs / t_ours:.2f}x |")
    # a bit-sliced comparison (24 slices, as l_extendedprice): rcfmt decodes the slices
    # once and compares all of them word by word in one native pass; with Roaring each
    # slice is an AND / AND NOT of whole bitmaps (O'Neil and Quass)
    slices = [rng.random(ROWS) < 0.5 for _ in range(24)]
    mine = [encode_mask(m) for m in slices]
    theirs = [BitMap(np.flatnonzero(m).astype(np.uint32)).serialize() for m in slices]
    c = 0b1010_1100_0011_0101_1110_0001
    everything = BitMap(np.arange(ROWS, dtype=np.uint32))

    entry = np.frombuffer(b"".join(mine), np.uint8)  # the slices of one entry, as the reader holds them

    def ours_slices():
        records = np.empty((24, 3), np.int64)
        native.locate(entry, 0, 24, ROWS, records)
        matrix = np.zeros((24, words(ROWS)), np.uint64)
        native.decode_rows(entry, records, ROWS, matrix)
        lt, eq = np.empty(words(ROWS), np.uint64), np.empty(words(ROWS), np.uint64)
        native.slices_compare(matrix, np.full(words(ROWS), np.uint64(2**64 - 1)), c, lt, eq)
        return native.popcount(lt | eq)

    def roaring_slices():
        maps = [BitMap.deserialize(b) for b in theirs]
        lt, eq = BitMap(), everything.copy()
        for j in range(23, -1, -1):
            if (c >> j) & 1:
                lt |= eq - maps[j]
                eq &= maps[j]
            else:
                eq -= maps[j]
        return len(lt | eq)

    assert ours_slices() == roaring_slices()
    t_ours, t_theirs = best(ours_slices, 50), best(roaring_slices, 50)
    print(f"| x <= c on 24 bit slices | {sum(map(len, mine)):,} | {sum(map(len, theirs)):,} | {t_ours * 1e6:.1f} µs | "
          f"{t_theirs * 1e6:.1f} µs | {t_theirs / t_ours:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
