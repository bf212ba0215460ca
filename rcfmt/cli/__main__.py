"""``python -m rcfmt.cli``: the ``rcfmt`` command."""
from . import run

run()
