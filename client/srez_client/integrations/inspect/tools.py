"""The tools as Inspect ``ToolDef`` objects, bound to one sample's episode.

Each tool's parameters are the project's own JSON Schema (:func:`srez_env.actions.openai_tools`,
the schema every agent of the project sees), read into Inspect's ``ToolParams``. Inspect's schema
model keeps every keyword the schemas use but two, rewritten here to their exact equivalents
(:func:`inspect_schema`): ``{"const": v}`` becomes ``{"enum": [v]}``, and ``"default": null``
(an annotation that validates nothing) is left out. Outputs are never truncated (``max_output=0``):
the model reads what every agent reads. Calls run one at a time (``parallel=False``), in the order
the model made them, each a step of the episode.
"""

from __future__ import annotations

import copy
from typing import Any

from inspect_ai.tool import ToolDef, ToolParams

from srez_client.integrations.inspect.episode import SampleEpisode
from srez_env.actions import openai_tools


def inspect_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameter schema as Inspect's ``ToolParams`` can hold it, meaning the same."""
    rewritten: dict[str, Any] = _rewrite(copy.deepcopy(parameters))
    return rewritten


def _rewrite(node: Any) -> Any:
    if isinstance(node, dict):
        if "const" in node:
            node["enum"] = [node.pop("const")]
        if "default" in node and node["default"] is None:
            del node["default"]
        for value in node.values():
            _rewrite(value)
    elif isinstance(node, list):
        for item in node:
            _rewrite(item)
    return node


def episode_tools(episode: SampleEpisode) -> list[ToolDef]:
    """The tools, in the project's order, each calling into ``episode``."""
    return [_tool_def(episode, spec["function"]) for spec in openai_tools()]


def _tool_def(episode: SampleEpisode, function: dict[str, Any]) -> ToolDef:
    name = str(function["name"])

    async def execute(**kwargs: Any) -> str:
        return episode.call(name, kwargs)

    return ToolDef(
        execute,
        name=name,
        description=str(function["description"]),
        parameters=ToolParams.model_validate(inspect_schema(function["parameters"])),
        parallel=False,
        max_output=0,
    )
