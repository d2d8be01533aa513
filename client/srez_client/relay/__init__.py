"""The host model relay: one litellm per host, serving every run through scoped tokens."""
