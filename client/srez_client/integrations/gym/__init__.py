"""SRE-Zero as a Gymnasium environment: ``gymnasium.make("srez/SREZero-v0", task=...)``.

Importing this package registers ``srez/SREZero-v0`` (it needs the ``gym`` extra:
``pip install 'srez[gym]'``). Gymnasium 1.x has no plugin entry points (its registry is filled
by imports alone), so a user either imports this package first or names it in the id, which
makes ``gymnasium.make`` import it: ``gymnasium.make("srez_client.integrations.gym:srez/SREZero-v0")``.
"""

from __future__ import annotations

from typing import Final

import gymnasium

from srez_client.integrations.gym.env import SREZeroEnv

ENV_ID: Final = "srez/SREZero-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="srez_client.integrations.gym.env:SREZeroEnv")

__all__ = ["ENV_ID", "SREZeroEnv"]
