"""The old name of :mod:`rcfmt.storage.fetch`, kept for code written before the storage
package (``from rcfmt.fetch_options import FetchOptions``, the Spark source's import
until then): importing it gives that module itself, so its names are the same objects.
New code imports ``rcfmt.FetchOptions`` or from :mod:`rcfmt.storage`."""
import sys

from .storage import fetch

sys.modules[__name__] = fetch
