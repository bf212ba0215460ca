"""``rcfmt.polars``: rcfmt as a Polars lazy source (``from rcfmt.polars import
scan_rcfmt``), the public name of :mod:`rcfmt.interop.polars`: importing it gives that
module itself, so its names are the same objects."""
import sys

from .interop import polars

sys.modules[__name__] = polars
