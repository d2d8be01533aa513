"""The daemon's process services: one-shot commands (``/api/exec``) and terminals (``/api/pty``).

Both run processes for whoever holds the run's token, share one cap on concurrent sessions
(``limits.SessionLimiter``) and one way of making sure a session's processes are gone when it
ends (``procs``).
"""
