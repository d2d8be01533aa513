"""SRE-Zero where agent builders already work: one subpackage per ecosystem (``mcp``,
``inspect``, ``gym``, ``verifiers``).

Each subpackage imports its ecosystem's library (an optional extra of ``srez``) only in its own
modules, so ``pip install srez`` works without any of them; the command or module that needs one
says which extra to install.
"""
