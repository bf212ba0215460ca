"""``rcfmt.pandas_io``: pandas DataFrames in and out (``rcfmt.read_pandas``), the public
name of :mod:`rcfmt.interop.pandas_io`: importing it gives that module itself, so its
names are the same objects."""
import sys

from .interop import pandas_io

sys.modules[__name__] = pandas_io
