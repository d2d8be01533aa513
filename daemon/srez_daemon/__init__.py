"""SRE-Zero run daemon (one per run). Importing this package pulls in no server library."""
