"""Benchmarks (run by `make bench`, never by the test suite). See docs/benchmarks.md."""
