"""``srez mcp``: the agent's tools as an MCP server (issue 14).

* :mod:`.port`: what the server needs of an episode (:class:`~.port.EpisodePort`: the task, and
  one tool call at a time) and the rules of its calls (:class:`~.port.ToolCalls`);
  :mod:`.socket_port` reaches a run's agent socket (the daemon records every call; aiohttp's
  client, in :mod:`.agent_http`),
  :mod:`.inline_port` hosts an episode in this process (the ``inline`` backend's recorder, so its
  run folder is an inline run's).
* :mod:`.server`: the MCP server over either port, on stdio or streamable HTTP on loopback; the
  only module that imports the ``mcp`` library (installed with ``srez[mcp]``). :mod:`.serve`
  runs it for ``srez mcp``; ``python -m srez_client.integrations.mcp --socket`` (:mod:`.__main__`)
  is ``srez mcp --socket`` alone, for the agent's sandbox.
* :mod:`.agent_kind` and :mod:`.launch`: ``--agent mcp:NAME``, any MCP client as the agent under
  test, started inside the run with an MCP configuration that points at that server.
"""
