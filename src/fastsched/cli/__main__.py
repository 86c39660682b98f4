"""``python -m fastsched.cli``: the ``fastsched`` command."""
import sys

from . import main

sys.exit(main())
