"""Benchmarks over real text-to-SQL data: datasets, directive metrics, reports."""
