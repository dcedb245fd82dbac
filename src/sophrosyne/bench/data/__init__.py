"""What the bench reads: datasets and their questions, schemas and gold, by name from one registry.

Lowest first: spider2_eval (Spider 2.0's result tables and comparison rules), types (Question, Dataset, Suite),
folders (where the datasets are), files (questions and tables.json files), suites (where each question runs,
the part a run takes), bird, spider, spider2 (cloud DDL for directives), spider2_lite (scored instances),
text2sql_classic (the six classic sets), and registry (every dataset by name). Nothing here imports the rest of
the bench.
"""
