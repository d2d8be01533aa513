"""The wire contract shared by the daemon and the client: pydantic models, no server code.

Importing this package pulls in pydantic and orjson only (no aiohttp), so the client, the CLI and
the inline backend can use it without the daemon's dependencies. The names below are loaded on
first use (PEP 562): the daemon reads :mod:`srez_daemon.protocol.routes` before it listens and
must not pay for pydantic then.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from srez_core.wire_version import (  # light: health answers before the models load
    PROTOCOL_VERSION,
    srez_version,
)

if TYPE_CHECKING:
    from srez_daemon.protocol.dialog import (
        DIALOG_ADAPTER,
        ENTRY_TYPES,
        EPOCH_TS,
        MAX_LINE_BYTES,
        Assistant,
        DialogEntry,
        ErrorEntry,
        ErrorKind,
        NotesDropped,
        ProviderError,
        SessionCompleted,
        SessionFailed,
        SessionStarted,
        SessionTimedOut,
        TaskPrompt,
        Thinking,
        TokenCount,
        ToolCall,
        ToolResult,
        Usage,
        UtcTimestamp,
        dialog_json_schema,
        encode_entry,
        iter_dialog,
        parse_line,
    )
    from srez_daemon.protocol.files import (
        RUN_FILES_SCHEMA_VERSION,
        Provenance,
        RunAttempt,
        RunManifest,
        RunSummary,
    )

_HOMES: tuple[str, ...] = ("srez_daemon.protocol.dialog", "srez_daemon.protocol.files")

if not TYPE_CHECKING:  # mypy reads the imports above; an unknown name stays an error for it

    def __getattr__(name: str) -> object:
        if name in __all__:
            for home in _HOMES:
                module = importlib.import_module(home)
                if hasattr(module, name):
                    value = getattr(module, name)
                    globals()[name] = value  # later lookups skip this function
                    return value
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)


__all__ = [
    "DIALOG_ADAPTER",
    "ENTRY_TYPES",
    "EPOCH_TS",
    "MAX_LINE_BYTES",
    "PROTOCOL_VERSION",
    "RUN_FILES_SCHEMA_VERSION",
    "Assistant",
    "DialogEntry",
    "ErrorEntry",
    "ErrorKind",
    "NotesDropped",
    "Provenance",
    "ProviderError",
    "RunAttempt",
    "RunManifest",
    "RunSummary",
    "SessionCompleted",
    "SessionFailed",
    "SessionStarted",
    "SessionTimedOut",
    "TaskPrompt",
    "Thinking",
    "TokenCount",
    "ToolCall",
    "ToolResult",
    "Usage",
    "UtcTimestamp",
    "dialog_json_schema",
    "encode_entry",
    "iter_dialog",
    "parse_line",
    "srez_version",
]
