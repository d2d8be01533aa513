"""Launching a run: what the host gives it before its backend starts it.

A backend runs what its :class:`~srez_client.backends.base.LaunchSpec` says and resolves nothing
itself. :class:`RunLauncher` completes the spec on the host, then launches it:

* the agent: ``replay:PATH`` made absolute, and a custom agent's command resolved (from
  ``--agent-cmd`` or ``SREZ_AGENT_CMD``, its file arguments absolute;
  :func:`~srez_client.agent_command.agent_command`), so the backend starts what was named here;
* the task's provenance, as ``run.json`` records it (:func:`~srez_env.provenance.task_provenance`),
  the digest of its set included (a task that is not packaged travels in ``LaunchSpec.task_file``,
  with its set's digest);
* for a built-in LLM agent with a model, the model relay (docs/security.md A12): one
  :class:`~srez_client.relay.runs.RunModels` per launcher, in this process, started with the first
  such run on the address the backend's runs reach this host by
  (:meth:`~srez_client.backends.base.Backend.host_address`), closed with the launcher. The run is
  named here (its id is in its grant) and told only the relay's URL, its scoped token and its other
  ``SREZ_LLM_*`` settings (``LaunchSpec.model_env``). The token is revoked when the launch fails,
  when the host stops the run (:meth:`RunLauncher.stop`), and when it sees the run end
  (:meth:`RunLauncher.revoke`, which :func:`~srez_client.lifecycle.run.run_to_results` calls once
  the run is finished or stopped).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from srez_client.agent_command import absolute_replay, agent_command
from srez_client.backends.base import Backend, LaunchSpec, RunHandle
from srez_client.errors import BackendError
from srez_client.layout import new_run_id
from srez_client.relay.runs import RunModels
from srez_client.relay.server import ModelRelay
from srez_env.agents.llm import LLM_SPECS
from srez_env.provenance import task_provenance


class RunLauncher:
    """Launches runs on one backend with what the host gives them; see the module docstring.

    Args:
        backend: Where the runs execute.
        environ: The launcher's environment (``SREZ_AGENT_CMD``, the ``SREZ_LLM_*`` settings of
            the relay); default this process's.
        cwd: The folder relative paths of the agent's command are taken from (default: the
            current folder at each launch).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        environ: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.backend = backend
        self._environ = environ
        self._cwd = cwd
        self.models = RunModels(backend.name, self._host_address, where="address")
        """The model relay of this launcher's LLM runs (started with the first)."""

    async def _host_address(self) -> str:
        address = await self.backend.host_address()
        if address is None:
            msg = f"the {self.backend.name} backend's runs cannot reach a model relay on this host"
            raise BackendError(msg)
        return address

    async def relay(self) -> ModelRelay:
        """The model relay of this launcher's LLM runs (started now if need be)."""
        return await self.models.relay()

    async def prepare(self, spec: LaunchSpec) -> LaunchSpec:
        """``spec`` completed with what the host gives the run (see the module docstring).

        Raises:
            UsageError: If the agent's command is missing, refused or names a missing file.
            srez_env.errors.EnvError: If the task is unknown, or its task file is not valid.
            BackendError: If the model relay cannot be served for the backend's runs.
        """
        environ = os.environ if self._environ is None else self._environ
        agent_spec = absolute_replay(spec.agent_spec)
        agent_cmd = agent_command(agent_spec, spec.agent_cmd, environ, cwd=self._cwd)
        task = await asyncio.to_thread(spec.task)
        set_digest = spec.task_file.set_digest if spec.task_file is not None else None
        provenance = await asyncio.to_thread(task_provenance, task, set_digest)
        spec = spec.model_copy(
            update={"agent_spec": agent_spec, "agent_cmd": agent_cmd, "provenance": provenance}
        )
        if not self._through_relay(spec):
            return spec
        run_id = spec.relayed.run_id if spec.relayed is not None else spec.run_id
        run_id = run_id or new_run_id(datetime.now(UTC))
        model_env = await self.models.environment(spec, run_id)
        return spec.model_copy(update={"run_id": run_id, "model_env": model_env})

    def _through_relay(self, spec: LaunchSpec) -> bool:
        """A built-in LLM agent with a model, on a backend whose runs reach this host."""
        return (
            spec.agent_spec in LLM_SPECS
            and spec.agent_cmd is None
            and spec.model not in ("", "none")
            and self.backend.reaches_host
        )

    async def launch(self, spec: LaunchSpec) -> RunHandle:
        """Complete ``spec`` (:meth:`prepare`) and launch it; the run's relay token is revoked
        if the launch fails.

        Raises:
            What :meth:`prepare` and the backend's ``launch`` raise.
        """
        prepared = await self.prepare(spec)
        try:
            return await self.backend.launch(prepared)
        except BaseException:
            if prepared.run_id is not None:
                self.models.revoke(prepared.run_id)
            raise

    async def stop(self, handle: RunHandle) -> None:
        """Stop the run (its backend's ``stop``), its relay token revoked first."""
        self.revoke(handle.run_id)
        await self.backend.stop(handle)

    def revoke(self, run_id: str) -> None:
        """The run's relay token stops working: its agent phase is over (nothing if it had none)."""
        self.models.revoke(run_id)

    def close(self) -> None:
        """Stop the model relay: every token stops working (a later LLM run starts a new one)."""
        self.models.close()
