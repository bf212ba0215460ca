"""Progress bars for long operations (tqdm, on stderr): shown when stderr is a
terminal, silent otherwise or when asked (``progress=False``).

Operations take ``progress``: None (the default: a bar on a terminal), True (always)
or False (never).
"""
from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator

__all__ = ["progress_bar", "wanted"]


def wanted(progress) -> bool:
    """Whether to show a bar for the ``progress`` option."""
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty and isatty())
    if not isinstance(progress, bool):
        from ..errors import InvalidOptionError

        raise InvalidOptionError(f"progress must be True, False or None, got {progress!r}")
    return progress


@contextlib.contextmanager
def progress_bar(progress, *, total: int | None = None, unit: str = "rows",
                 desc: str | None = None) -> Iterator[Callable[[int], None]]:
    """A function to call with each step's amount (rows, files), drawing a bar with
    the amount done, the rate and (with ``total``) the time left -- or doing nothing
    when ``progress`` says no bar (:func:`wanted`)."""
    if not wanted(progress):
        yield lambda n: None
        return
    import shutil

    from tqdm import tqdm

    # a terminal that reports no size (0 x 0) would get no bar at all from tqdm
    size = shutil.get_terminal_size(fallback=(100, 24))
    with tqdm(total=total, unit=f" {unit}", unit_scale=True, desc=desc, file=sys.stderr,
              ncols=min(size.columns or 100, 120), nrows=max(size.lines, 2), mininterval=0.2) as bar:
        yield bar.update
