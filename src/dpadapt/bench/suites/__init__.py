"""Benchmark suites; every module here registers its suites on import."""
