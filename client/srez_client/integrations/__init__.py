"""SRE-Zero where agent builders already work: one subpackage per ecosystem.

Each subpackage imports its ecosystem's library (an optional extra of ``srez``) and nothing else
imports it, so ``pip install srez`` without the extras still works.
"""
