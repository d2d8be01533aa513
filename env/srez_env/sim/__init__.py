"""The simulation: rules, the closed-form engine, the timeline and telemetry."""
