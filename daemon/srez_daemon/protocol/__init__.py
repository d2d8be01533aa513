"""The wire contract shared by the daemon and the client: pydantic models, no server code.

Importing this package pulls in pydantic and orjson only (no aiohttp), so the client, the CLI and
the inline backend can use it without the daemon's dependencies.
"""

from srez_daemon.protocol.dialog import (
    DIALOG_ADAPTER,
    ENTRY_TYPES,
    EPOCH_TS,
    MAX_LINE_BYTES,
    PROTOCOL_VERSION,
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
from srez_daemon.protocol.files import RUN_FILES_SCHEMA_VERSION, RunManifest, RunSummary
from srez_daemon.wire_version import srez_version

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
    "ProviderError",
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
