"""The ``local`` backend: one ``srez-daemon`` process group per run on 127.0.0.1, sandboxed."""
