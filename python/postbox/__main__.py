"""``python -m postbox`` is the same as the ``postbox`` command."""

import sys

from postbox.cli import main

sys.exit(main())
