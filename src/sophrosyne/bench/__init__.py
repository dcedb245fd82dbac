"""Benchmarks over real text-to-SQL data: datasets, directive metrics, reports.

Three floors, imports pointing down: data/ (what the bench reads: datasets by name), then the measuring
modules here (directives, scoring, runs, tokens, reports), then cli/ (the `sophrosyne bench` commands).
"""
