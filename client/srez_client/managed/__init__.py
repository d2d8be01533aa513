"""Managed multi-target runs (docs/design.md §10; usage in docs/managed.md).

A managed run is ``results/managed/<name>/``: ``run.json`` (targets, tasks, backend, budget),
``PAUSE``, ``targets/<target>/{output.json,summary.json,console.log,runner.log}``, the combined
``summary.{json,md,png}`` and ``command.{sh,ps1}``. The runner (``srez managed run``) runs one
target at a time, task by task, and checkpoints after each.

The API for other front ends (the TUI dashboard) is :mod:`srez_client.managed.api`, re-exported
here; every function takes the results root and the run's name:

* ``list_managed(root)``, ``read_run(root, name)``, ``status(root, name) -> ManagedStatus``
  (runner, pause, per-target :class:`TargetSummary`: state, completed/total, mean reward,
  resolved rate, provider / agent / harness error counts, cost; today's :class:`BudgetStatus`);
* ``create_managed(root, name, targets=default_targets(baselines, models), tasks=...)``,
  ``add_target``, ``remove_target``;
* ``start_runner(root, name, target=None) -> pid``, ``pause``, ``clear_pause``, ``stop``;
* ``summarize(root, name) -> CombinedSummary``, ``export_queue``, ``delete_target_artifacts``,
  ``delete_managed``.

Layers: :mod:`.models` (file formats), :mod:`.plan` (queue and resume decisions),
:mod:`.ledger` (budget arithmetic and its append-only file), :mod:`.summary` (aggregation) are
pure or nearly; :mod:`.store`, :mod:`.runner`, :mod:`.recover`, :mod:`.summarize` do the I/O.
"""

from srez_client.managed.api import *  # noqa: F403  (the API's own list, not a second copy)
from srez_client.managed.api import __all__ as _API
from srez_client.managed.models import Checkpoint, ManagedRun, PauseInfo, Target, TaskRecord
from srez_client.managed.store import ManagedError
from srez_client.managed.summary import CombinedSummary, TargetSummary

__all__ = [
    *_API,
    "Checkpoint",
    "CombinedSummary",
    "ManagedError",
    "ManagedRun",
    "PauseInfo",
    "Target",
    "TargetSummary",
    "TaskRecord",
]
