"""The old name of :mod:`rcfmt.storage.azure`, kept for code written before the storage
package (docs/STORAGE.md named ``rcfmt.azure_store.azure_settings`` and ``RETRIES``):
importing it gives that module itself, so its names and settings are the same objects.
New code imports ``azure_settings`` from :mod:`rcfmt.storage`."""
import sys

from .storage import azure

sys.modules[__name__] = azure
