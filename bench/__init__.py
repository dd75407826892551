"""Benchmarks (scripts, not tests)."""
