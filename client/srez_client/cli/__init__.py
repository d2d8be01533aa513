"""The ``srez`` command line (also installed as ``srez-client``): one module per command group."""

from srez_client.cli.main import main

__all__ = ["main"]
