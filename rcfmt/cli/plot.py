"""``rcfmt plot``: the min/max boxes of blocks and pages (or of a dataset's files), so a
user *sees* how well a layout will skip.

One column: every page's [min, max] drawn over the rows it holds, blocks outlined
around their pages (a filter ``lo <= c <= hi`` reads every page its band crosses).
Two columns: every block's box in the plane of the two (a filter on both is a
rectangle and reads every block whose box it touches). For a dataset the units are its
files, from the stats index. Strings are placed by rank among the bounds. Needs
matplotlib (``pip install 'rcfmt[plot]'``).
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidOptionError, RcfmtError

__all__ = ["plot"]


def _axis(stats, ltype):
    """``(lo, hi, has, label suffix)`` as floats; strings and binary by rank."""
    has = np.asarray(stats.has_min_max, bool)
    if ltype.kind.name == "VARBINARY":
        values = sorted({bytes(v) for v, h in zip(stats.min, has) if h} | {bytes(v) for v, h in zip(stats.max, has) if h})
        lo = np.array([np.searchsorted(values, bytes(v)) if h else np.nan for v, h in zip(stats.min, has)], float)
        hi = np.array([np.searchsorted(values, bytes(v)) if h else np.nan for v, h in zip(stats.max, has)], float)
        return lo - 0.4, hi + 0.4, has, " (rank of the bounds)"
    lo = np.array([float(v) if h else np.nan for v, h in zip(stats.min, has)])
    hi = np.array([float(v) if h else np.nan for v, h in zip(stats.max, has)])
    unit = ""
    if ltype.name == "decimal128":
        lo, hi, unit = lo / 10 ** ltype.scale, hi / 10 ** ltype.scale, ""
    elif ltype.name == "date32":
        unit = " (days since 1970-01-01)"
    elif ltype.name == "timestamp":
        unit = f" ({ltype.unit} since 1970)"
    return lo, hi, has, unit


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise RcfmtError("plot needs matplotlib: pip install 'rcfmt[plot]' (or matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(path: str, columns: list[str], out: str) -> str:
    """Draw the boxes of ``columns`` (one or two) of the file or dataset at ``path`` into
    the image ``out``; returns a one-line summary."""
    from .reports import is_dataset

    if not 1 <= len(columns) <= 2:
        raise InvalidOptionError("plot takes one or two --column")
    plt = _pyplot()
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots(figsize=(10, 6))
    if is_dataset(path):
        from ..dataset import open_dataset
        from ..schema.types import logical_type_from_arrow

        ds = open_dataset(path)
        for c in columns:
            if ds.schema.get_field_index(c) < 0:
                raise InvalidOptionError(f"unknown column {c!r}; the dataset has {ds.schema.names}")
        axes = [_axis(ds.stats_arrays(c), logical_type_from_arrow(ds.schema.field(c).type)) for c in columns]
        unit, count = "file", ds.num_files
        rows = np.asarray(ds.stats_arrays(columns[0]).row_count, np.int64)
    else:
        from ..file.reader import RcfmtFile

        with RcfmtFile(path) as f:
            ltypes = [f.footer.columns[f.column_index(c)].type for c in columns]
            axes = [_axis(f.block_stats(c), t) for c, t in zip(columns, ltypes)]
            unit, count = "block", f.num_blocks
            rows = np.asarray(f.footer.blocks["row_count"], np.int64)
            if len(columns) == 1:  # the pages too
                col = f.column_index(columns[0])
                start = 0
                for b in range(f.num_blocks):
                    entries = f.page_index(b, col)
                    plo, phi, phas, _ = _axis(f.page_stats(b, col, entries), ltypes[0])
                    for k in range(len(entries)):
                        if phas[k]:
                            first = start + int(entries["first_row"][k])
                            ax.add_patch(Rectangle((first, plo[k]), int(entries["row_count"][k]), phi[k] - plo[k],
                                                   facecolor="tab:blue", alpha=0.35, linewidth=0))
                    start += int(rows[b])
    if len(columns) == 1:
        lo, hi, has, suffix = axes[0]
        start = np.concatenate(([0], np.cumsum(rows)[:-1]))
        for i in range(count):
            if has[i]:
                ax.add_patch(Rectangle((start[i], lo[i]), rows[i], hi[i] - lo[i], fill=False, edgecolor="black",
                                       linewidth=0.8))
        ax.set_xlim(0, max(int(rows.sum()), 1))
        ax.set_xlabel(f"row ({unit}s outlined" + (", pages filled)" if unit == "block" else ")"))
        ax.set_ylabel(columns[0] + suffix)
        span = np.nanmax(hi) - np.nanmin(lo) if has.any() else 0.0
        covered = float(np.nansum((hi - lo)[has]) / span / max(count, 1)) if span > 0 else 0.0
        summary = f"{count} {unit}s of {columns[0]}: each spans {covered:.0%} of the range on average"
        ylo, yhi = (np.nanmin(lo), np.nanmax(hi)) if has.any() else (0.0, 1.0)
    else:
        (xlo, xhi, xhas, xs), (ylo_, yhi_, yhas, ys) = axes
        has = xhas & yhas
        for i in np.flatnonzero(has):
            ax.add_patch(Rectangle((xlo[i], ylo_[i]), xhi[i] - xlo[i], yhi_[i] - ylo_[i], fill=True,
                                   facecolor="tab:blue", alpha=0.15, edgecolor="black", linewidth=0.6))
        ax.set_xlabel(columns[0] + xs)
        ax.set_ylabel(columns[1] + ys)
        if has.any():
            ax.set_xlim(np.nanmin(xlo[has]), np.nanmax(xhi[has]))
        plane = (np.nanmax(xhi) - np.nanmin(xlo)) * (np.nanmax(yhi_) - np.nanmin(ylo_)) if has.any() else 0.0
        area = float(np.nansum(((xhi - xlo) * (yhi_ - ylo_))[has]) / plane) if plane > 0 else 0.0
        summary = f"{int(has.sum())} {unit} boxes over ({columns[0]}, {columns[1]}): {area:.1f}x the plane in all"
        ylo, yhi = (np.nanmin(ylo_), np.nanmax(yhi_)) if has.any() else (0.0, 1.0)
    pad = (yhi - ylo) * 0.02 or 1.0
    ax.set_ylim(ylo - pad, yhi + pad)
    ax.set_title(f"{path}\n{summary}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return summary
