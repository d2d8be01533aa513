"""``python -m srez_client.cli``: the command line, as the installed ``srez`` script runs it."""

import sys

from srez_client.cli.main import main

sys.exit(main())
