"""Backends: where and how a run executes (DESIGN.md §9).

Only ``inline`` exists so far: :func:`run_inline` runs one episode in this process and writes the
same ``results/`` layout a daemon-hosted run produces. The common backend interface of DESIGN.md
§9 (``launch``, ``list``, ``endpoint``, ``wait``, ``stop``, ``remove``, ``logs``, ``copy_out``,
in ``base.py``, with one conformance suite for every backend) arrives together with the daemon and
the ``local`` and ``docker`` backends; ``inline`` will then be adapted to it.
"""

from srez_client.backends.inline import BACKEND, InlineRun, run_inline

AVAILABLE_BACKENDS = (BACKEND,)
"""Backends the command line accepts today."""

__all__ = ["AVAILABLE_BACKENDS", "InlineRun", "run_inline"]
