"""Mirroring: a stopped run folder copied into ``results/`` without trusting anything in it."""
