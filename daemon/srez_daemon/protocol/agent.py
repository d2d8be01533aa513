"""The contract between the daemon and the agent process it starts (DESIGN.md §5).

Both sides import these from here, so the agent process needs nothing of the daemon but the
protocol: not the episode, the simulator or the grader.
"""

from __future__ import annotations

from typing import Final

EXIT_PROVIDER: Final = 75
"""``srez-agent``'s exit code when the model provider failed for good (``EX_TEMPFAIL``); the run
counts as a provider error only when the daemon attests it (``srez_daemon.attest``)."""
EXIT_CONFIG: Final = 2
"""``srez-agent``'s exit code when its configuration was refused."""
RAW_REPLY_TOOL: Final = "_reply"
"""The tool an agent posts a reply to that is not a valid action (recorded as an invalid call)."""
