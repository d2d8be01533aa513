"""SRE-Zero where agent builders already work: one subpackage per ecosystem.

Each subpackage imports its ecosystem's library (an optional extra of ``srez``) only when it is
itself imported, so ``pip install srez`` without the extras still works.
"""
