"""``python -m srez_client.integrations.mcp --socket PATH [--http [PORT] [--token-file PATH]]``:
``srez mcp --socket`` without the rest of the command line, for the agent's sandbox: there the
task files are hidden, and ``srez`` reads them as it starts. What an ``mcp:NAME`` agent's
configuration runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from srez_client.errors import ClientError

EXIT_USAGE = 2
LIBRARIES = ("mcp", "mcp_types", "uvicorn")
"""What ``srez[mcp]`` installs that serving needs."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"srez: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Serves the agent socket named on the command line; 2 and one line on bad input."""
    parser = _Parser(prog="python -m srez_client.integrations.mcp")
    parser.add_argument("--socket", type=Path, required=True, metavar="PATH")
    parser.add_argument("--http", type=int, nargs="?", const=0, metavar="PORT")
    parser.add_argument("--token-file", type=Path, metavar="PATH")
    args = parser.parse_args(argv)
    if args.http is not None and not 0 <= args.http <= 65535:
        parser.error(f"--http: must be a TCP port (0 to 65535; 0: a free one), got {args.http}")
    if args.token_file is not None and args.http is None:
        parser.error("--token-file is the token of --http; stdio needs none")
    try:
        from srez_client.integrations.mcp.serve import serve_socket

        serve_socket(args.socket, args.http, args.token_file)
    except ModuleNotFoundError as e:
        if e.name not in LIBRARIES:
            raise
        sys.stderr.write(f"srez: error: {e}: pip install 'srez[mcp]'\n")
        return EXIT_USAGE
    except ClientError as e:
        sys.stderr.write(f"srez: error: {' '.join(str(e).split())}\n")
        return EXIT_USAGE
    except OSError as e:
        sys.stderr.write(f"srez: error: {' '.join(str(e).split())}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
