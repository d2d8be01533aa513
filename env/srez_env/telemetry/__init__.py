"""What the agent observes: metrics, logs, alerts, events and status, rendered from the world."""
