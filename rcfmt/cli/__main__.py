"""``python -m rcfmt.cli``: the ``rcfmt`` command."""
import sys

from . import main

sys.exit(main())
