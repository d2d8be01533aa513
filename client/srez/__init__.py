"""The distribution's own name as an import package, for registries that name things after it.

Inspect AI names a task after the top-level package that defines it, so ``srez/sre_zero`` must be
defined in ``srez``: :mod:`srez._inspect` does that and nothing else (it is loaded by Inspect's
entry point only, never by an import of this package). The code lives in
:mod:`srez_client.integrations`.
"""
