"""``python3 -m lockstep``: the same as the ``lockstep`` command."""

import sys

from lockstep._cli import main

sys.exit(main())
