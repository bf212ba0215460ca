"""The old name of :mod:`rcfmt.storage.s3`, kept for code written before the storage
package (docs/STORAGE.md named ``rcfmt.s3_source.ATTEMPTS`` and its timeouts):
importing it gives that module itself, so setting its constants still takes effect.
New code uses :mod:`rcfmt.storage.s3`."""
import sys

from .storage import s3

sys.modules[__name__] = s3
