"""Regenerate (or, with --check, compare) the 40 canonical task files; see
:mod:`srez_env.generator.taskfiles`."""

import sys

from srez_env.generator.taskfiles import main

if __name__ == "__main__":
    sys.exit(main())
