"""The ``docker`` backend: one container per run from the run image; its engine, state and stop watcher."""
