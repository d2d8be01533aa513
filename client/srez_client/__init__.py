"""SRE-Zero host-side client: backends, results, CLI."""
