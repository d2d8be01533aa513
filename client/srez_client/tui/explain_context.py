"""Gathers what the AI tab sends about a run, from any run source (live or finished).

Reads the dialog (a live run: as far as it goes now), the agent's diff, the reference (only
once the source serves it: after the agent phase), the grade and the end of the logs. A part
that is missing is left empty; the prompt says so.
"""

from __future__ import annotations

import contextlib

import orjson

from srez_client.errors import ClientError
from srez_client.tui.source import RunSource, SourceUnavailable
from srez_client.tui.viewmodels.explain_prompt import ExplainContext, dialog_digest
from srez_daemon.protocol import iter_dialog

_SKIP = ("diff", "reference_patch")
_FAILS = (ClientError, SourceUnavailable, OSError)


async def _tail(source: RunSource, name: str, limit: int = 4000) -> str:
    out = ""
    with contextlib.suppress(*_FAILS):
        async for chunk in source.logs(name, follow=False):
            out = (out + chunk)[-limit:]
    return out


async def gather_context(source: RunSource) -> ExplainContext:
    """The run's records for :func:`~srez_client.tui.viewmodels.explain_prompt.build_messages`."""
    task = agent = model = ""
    with contextlib.suppress(*_FAILS):
        meta = await source.meta()
        task, agent, model = meta.task_id, meta.agent, meta.model
    dialog = ""
    with contextlib.suppress(*_FAILS):
        dialog = dialog_digest(iter_dialog(await source.dialog_bytes(), final=False))
    diff = ""
    with contextlib.suppress(*_FAILS):
        diff = await source.diff()
    reference: str | None = None
    with contextlib.suppress(*_FAILS):
        reference, _similarity = await source.reference()
    grade = ""
    with contextlib.suppress(*_FAILS):
        result = {k: v for k, v in (await source.grade()).items() if k not in _SKIP}
        grade = orjson.dumps(result, option=orjson.OPT_INDENT_2).decode()
    logs = []
    for name in ("agent", "evaluator"):
        if name in source.log_names() and (text := await _tail(source, name)):
            logs.append(f"--- {name}.log\n{text}")
    return ExplainContext(task, agent, model, dialog, diff, reference, grade, "\n".join(logs))
