"""The ``inline`` backend: the episode runs in this process (no daemon)."""
