"""The 40 task files (``sre-001.yaml`` … ``sre-040.yaml``), written by ``env/tools/gen_tasks.py``.

A package only so that :mod:`importlib.resources` can anchor on it; load tasks through
:func:`srez_env.task.load_tasks`.
"""
