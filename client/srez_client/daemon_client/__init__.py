"""The typed client of a run daemon's HTTP API, its dialog stream and the plain follower."""
