"""SRE-Zero as a verifiers environment: a taskset whose tasks carry a per-rollout tool server.

verifiers names a taskset by an installed top-level module (``vf-eval srez-zero`` imports
``srez_zero``, which re-exports :class:`SrezTaskset`); this package needs the ``verifiers``
extra (``pip install 'srez[verifiers]'``). See :mod:`.taskset` for the tasks and the rubric,
:mod:`.toolset` for the tools, :mod:`.scoring` for how a rollout is graded.
"""

from srez_client.integrations.verifiers.models import (
    SrezData,
    SrezState,
    SrezTaskConfig,
    SrezTasksetConfig,
)
from srez_client.integrations.verifiers.taskset import SrezTask, SrezTaskset
from srez_client.integrations.verifiers.toolset import SrezToolset

__all__ = [
    "SrezData",
    "SrezState",
    "SrezTask",
    "SrezTaskConfig",
    "SrezTaskset",
    "SrezTasksetConfig",
    "SrezToolset",
]
