"""Benchmark harness: score benchmark items with any metric (cached), compare with humans and papers."""
