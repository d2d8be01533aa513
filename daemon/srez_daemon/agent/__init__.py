"""``srez-agent``: runs one benchmark agent against the agent socket (docs/design.md §5).

The process knows the socket's path (``SREZ_AGENT_SOCKET``), its agent spec (``SREZ_AGENT_SPEC``)
and the run seed (``SREZ_RUN_SEED``), and learns everything else from ``GET /task``: the prompt,
the step budget and, for the scripted oracle alone, the task file. It can read nothing else of
the run.
"""
