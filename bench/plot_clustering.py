"""Picture of what clustering does: the min/max box of every block over the two
clustering columns, one panel per layout.

```
pip install matplotlib
python bench/plot_clustering.py [--datasets lineitem,flights] [--scale 1] [--rebuild]
```

Uses the files ``bench_clustering.py`` writes to ``bench/data/clustering/`` (and writes
those that are missing, with the same settings). Saves ``bench/clustering_<dataset>.png``.
A query on the two columns is a rectangle; it must read every block whose box it
touches. Small, disjoint boxes mean good skipping; the title of each panel gives the
sum of the box areas as a multiple of the whole plane (1x: the blocks tile the plane
without overlap; natural order: about one plane per block).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parent.parent))
import bench_clustering as bc  # noqa: E402
from common import BENCH_DIR, scratch_dir  # noqa: E402

import rcfmt  # noqa: E402

TITLES = {"natural": "natural order", "sort": "linear sort", "zorder_direct": "Z-order, direct",
          "zorder_rank": "Z-order, rank", "hilbert_rank": "Hilbert, rank"}


def _axis_values(stats, kind: str, categories=None):
    """(lo, hi) float arrays of the blocks' bounds on a plotting axis."""
    ok = stats.has_min_max
    if kind == "category":  # strings: position among the sorted distinct values
        lo = np.array([np.searchsorted(categories, v, side="left") for v in stats.min], float) - 0.4
        hi = np.array([np.searchsorted(categories, v, side="right") - 1 for v in stats.max], float) + 0.4
        return lo, hi, ok
    lo = np.asarray(stats.min, dtype=float)
    hi = np.asarray(stats.max, dtype=float)
    return lo, hi, ok


def plot_dataset(name: str, scale: float, layouts: list[str], rebuild: bool) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    loader, by, _, block_rows, page_rows = bc.DATASETS[name]
    tag = f"{name}_sf{scale:g}".replace(".", "_") if name == "lineitem" else name
    out_dir = scratch_dir("clustering")
    table = None
    paths = {}
    for lay in layouts:
        path = out_dir / f"{tag}_{lay}.rcfmt"
        sidecar = path.with_name(path.name + ".build.json")
        if rebuild or not path.exists() or not sidecar.exists():
            table = table if table is not None else loader(scale)
            bc.build_layout(table, by, lay, path, block_rows, page_rows, rebuild)
        paths[lay] = path
    xcol, ycol = by
    categories = None
    with rcfmt.open(paths[layouts[0]]) as f:
        ytype = f.schema.field(ycol).type
        xtype = f.schema.field(xcol).type
        if str(ytype) in ("string", "large_string"):
            values = f.read(columns=[ycol]).column(ycol).drop_null().unique().to_pylist()
            categories = np.array(sorted(v.encode() for v in values), dtype=object)
    ykind = "category" if categories is not None else "number"

    ncols = 3 if len(layouts) > 4 else len(layouts)
    nrows = -(-len(layouts) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.9 * nrows), squeeze=False)
    boxes = {}
    for lay in layouts:
        with rcfmt.open(paths[lay]) as f:
            boxes[lay] = (_axis_values(f.block_stats(xcol), "number"),
                          _axis_values(f.block_stats(ycol), ykind, categories))
    all_x = np.concatenate([b[0][0][b[0][2]] for b in boxes.values()] + [b[0][1][b[0][2]] for b in boxes.values()])
    all_y = np.concatenate([b[1][0][b[1][2]] for b in boxes.values()] + [b[1][1][b[1][2]] for b in boxes.values()])
    x0, x1 = float(all_x.min()), float(all_x.max())
    y0, y1 = float(all_y.min()), float(all_y.max())
    symlog = name == "flights"
    cmap = plt.get_cmap("viridis")
    for ax, lay in zip(axes.flat, layouts):
        (xl, xh, xok), (yl, yh, yok) = boxes[lay]
        ok = xok & yok
        n = len(xl)
        area = 0.0
        for i in np.flatnonzero(ok):
            w, h = xh[i] - xl[i], yh[i] - yl[i]
            if symlog:
                fx = (_symlog(xh[i]) - _symlog(xl[i])) / (_symlog(x1) - _symlog(x0))
            else:
                fx = w / (x1 - x0) if x1 > x0 else 1.0
            area += fx * (h / (y1 - y0) if y1 > y0 else 1.0)
            color = cmap(i / max(n - 1, 1))
            ax.add_patch(Rectangle((xl[i], yl[i]), max(w, 1e-9), max(h, 1e-9),
                                   facecolor=(*color[:3], 0.18), edgecolor=color, linewidth=0.9))
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        if symlog:
            ax.set_xscale("symlog", linthresh=10)
        ax.set_title(f"{TITLES.get(lay, lay)}: {n} blocks, \u03a3 area {area:.1f}\u00d7", fontsize=10)
        ax.set_xlabel(xcol, fontsize=9)
        ax.set_ylabel(ycol, fontsize=9)
        ax.tick_params(labelsize=8)
        if str(xtype).startswith("date32"):  # days since 1970: a tick on every 1 January
            years = np.arange(np.datetime64(int(x0), "D").astype("datetime64[Y]") + 1,
                              np.datetime64(int(x1), "D").astype("datetime64[Y]") + 1)
            ax.set_xticks(years.astype("datetime64[D]").astype(np.int64).astype(float))
            ax.set_xticklabels([str(y) for y in years])
        if ykind == "category":
            step = max(1, len(categories) // 12)
            ticks = np.arange(0, len(categories), step)
            ax.set_yticks(ticks)
            ax.set_yticklabels([categories[t].decode() for t in ticks], fontsize=7)
    for ax in list(axes.flat)[len(layouts):]:
        ax.axis("off")
        ax.text(0.02, 0.5, "Each rectangle is one block: [min, max] of both\ncolumns from the footer statistics.\n"
                "A query is a rectangle too; it reads every\nblock whose box it touches.\n\n"
                "\u03a3 area: sum of the box areas in the plotted\naxes, as a multiple of the whole plane.",
                fontsize=9, va="center", transform=ax.transAxes)
    rows = f"{block_rows:,}-row blocks"
    fig.suptitle(f"{name}: block min/max boxes over ({xcol}, {ycol}), {rows} (colour: block order)", fontsize=11)
    fig.tight_layout()
    out = BENCH_DIR / f"clustering_{name}.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def _symlog(v: float, linthresh: float = 10.0) -> float:
    return float(np.sign(v) * np.log10(1 + abs(v) / linthresh))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="lineitem,flights")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--layouts", default=",".join(bc.LAYOUTS))
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is needed: pip install matplotlib (or pip install .[plot])", file=sys.stderr)
        return 2
    layouts = [x for x in args.layouts.split(",") if x]
    for name in [d for d in args.datasets.split(",") if d]:
        out = plot_dataset(name, args.scale, layouts, args.rebuild)
        print(f"{out} ({out.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
