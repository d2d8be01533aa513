"""The ``ray`` backend: each run a Ray task, executed by its node's own backend."""
