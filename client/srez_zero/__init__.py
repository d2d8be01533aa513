"""The verifiers plugin id of SRE-Zero: ``vf-eval srez-zero``, ``vf-validate srez-zero``.

verifiers resolves a taskset id to an installed top-level module that exports one ``Taskset``
subclass in ``__all__`` (a dotted path is not accepted), so this module is that name and nothing
else: the taskset lives in :mod:`srez_client.integrations.verifiers`.
"""

from srez_client.integrations.verifiers import SrezTaskset

__all__ = ["SrezTaskset"]
