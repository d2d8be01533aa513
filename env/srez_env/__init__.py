"""SRE-Zero benchmark: the deterministic simulated incident environment."""
