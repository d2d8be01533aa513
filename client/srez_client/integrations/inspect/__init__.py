"""SRE-Zero as an Inspect AI task (the optional extra ``srez[inspect]``).

``inspect eval srez/sre_zero --model ...`` plays the selected tasks (``-T tasks=...``,
``-T difficulty=...``, ``-T tasks_dir=...``, ``-T seed=... -T count=...``), one episode per sample
and epoch, with the tools under their exact schemas, and scores each with the project's grade:
the reward and the five checks as one multi-value score, explained by the grade's reasons.

Offline use: Inspect's ``mockllm`` counts the tokens of a reply that carries no usage with
tiktoken's ``o200k_base``, which it downloads on first use. The tests give every scripted reply its
usage (:class:`inspect_ai.model.ModelUsage`), so nothing is counted and nothing is fetched; a real
provider reports its own usage.
"""

from srez_client.integrations.inspect.dataset import TaskSelection, task_dataset, task_sample
from srez_client.integrations.inspect.episode import SampleEpisode
from srez_client.integrations.inspect.scorer import SCORE_KEYS, grade_score, srez_scorer
from srez_client.integrations.inspect.solver import GRADE_KEY, srez_agent
from srez_client.integrations.inspect.task import sre_zero_task
from srez_client.integrations.inspect.tools import episode_tools, inspect_schema

__all__ = [
    "GRADE_KEY",
    "SCORE_KEYS",
    "SampleEpisode",
    "TaskSelection",
    "episode_tools",
    "grade_score",
    "inspect_schema",
    "sre_zero_task",
    "srez_agent",
    "srez_scorer",
    "task_dataset",
    "task_sample",
]
