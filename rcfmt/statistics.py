"""The old name of :mod:`rcfmt.schema.statistics`, kept for code written before the schema
package (issue 39): importing it gives that module itself, so its names are the same
objects. Code in rcfmt imports from :mod:`rcfmt.schema`."""
import sys

from .schema import statistics

sys.modules[__name__] = statistics
