"""``python -m agcore_actors.cli``."""

import sys

from ._main import main

sys.exit(main())
