"""Baselines: the scripted oracle, the heuristic expert, the loudest-anomaly calibrator, a seeded
random agent, the trivial-agent floors (``noop``, ``restart-all``), and replay of a recorded
trajectory (docs/environment.md §3.10, §6.12, §6.13)."""
