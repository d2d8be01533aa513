"""Copying a run folder out of where it ran without trusting anything in it (docs/security.md A5,
A6, A10, A11): the plan (:mod:`.plan`, pure), the file-system walk and writes (:mod:`.fs`), tar
streams from an engine (:mod:`.tar`, :mod:`.tar_fs`) and whole trees (:mod:`.tree`).

Backends copy runs out with it; the mirror into ``results/`` builds on it. It imports neither.
"""
