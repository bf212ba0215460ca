"""Per-page cost of the native page pipeline (issue 10: "per-page overhead <= 2 us").

The same 1,048,576 random int64 values are written in one block with pages of 1,024
rows and of 65,536 rows (uncompressed and zstd), then the chunk is read whole, best of
30; ``(T_small - T_big) / (pages_small - pages_big)`` is what one more page costs
(header checks, two CRCs, a decompression call, the values kernel's per-page set-up).

    python bench/bench_per_page.py
"""
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
import rcfmt  # noqa: E402

scratch = tempfile.mkdtemp(prefix="rcfmt-per-page-")
rng = np.random.default_rng(0)
t = pa.table({"x": rng.integers(0, 1 << 40, 1 << 20)})
res = {}
for comp in ("none", "zstd"):
    for page_rows in (1024, 65536):
        p = f"{scratch}/pp_{comp}_{page_rows}.rcfmt"
        rcfmt.write_table(t, p, block_rows=1 << 20, page_rows=page_rows, page_size=1 << 30, compression=comp,
                          dictionary=False)
        f = rcfmt.open(p)
        pages = int(f.footer.chunks[0][0]["page_count"])
        best = 1e9
        for _ in range(30):
            t0 = time.perf_counter(); f.read_column_chunk(0, 0); best = min(best, time.perf_counter() - t0)
        res[(comp, page_rows)] = (best, pages)
        print(comp, page_rows, pages, f"{best*1e3:.2f} ms")
for comp in ("none", "zstd"):
    (ts, ps), (tb, pb) = res[(comp, 1024)], res[(comp, 65536)]
    print(comp, f"per extra page: {(ts - tb) / (ps - pb) * 1e6:.2f} us")
