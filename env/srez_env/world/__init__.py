"""The static world: configuration files, key schema, topology and history."""
