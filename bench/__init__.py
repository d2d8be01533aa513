"""``make bench`` (``python -m bench`` from the repository root): performance figures as JSON.

Not part of the installed packages: it measures them from outside, as a user would."""
