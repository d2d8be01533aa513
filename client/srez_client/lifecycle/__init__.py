"""The host's side of a run, on any backend: a backend composed with what the host adds.

* :mod:`~srez_client.lifecycle.launch`: what a run is given before its backend starts it (the
  agent's command resolved, the task's provenance, the model relay), as data in its launch spec;
* :mod:`~srez_client.lifecycle.run`: a run from launch to its results folder (wait, stop if
  late, copy out, regrade a run left without a grade, mirror);
* :mod:`~srez_client.lifecycle.recovery`: mirroring stopped runs: one (``srez mirror RUN``), the
  ones whose launcher died (``srez runs list``), each as it stops (``srez mirror --watch``).

Backends know nothing of it; it knows backends only through their interface and their capability
flags (:class:`~srez_client.backends.base.Backend`).
"""
