"""``srez schema dialog``: the JSON Schema of one line of ``dialog.jsonl``."""

from __future__ import annotations

import argparse
import json

from srez_client.cli.main import SCHEMAS
from srez_client.errors import UsageError
from srez_daemon.protocol import dialog_json_schema


def cmd_schema(args: argparse.Namespace) -> int:
    """``srez schema dialog``."""
    if args.which is None:
        msg = f"srez schema needs which schema to print: one of {', '.join(SCHEMAS)} (e.g. 'srez schema dialog')"
        raise UsageError(msg)
    print(json.dumps(dialog_json_schema(), indent=2))
    return 0
