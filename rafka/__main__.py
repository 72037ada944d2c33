"""``python -m rafka`` runs the ``rafka`` command."""

import sys

from rafka.cli.main import main

sys.exit(main())
