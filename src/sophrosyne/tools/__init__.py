"""One module per tool: its result model, how it is built, cut to the budget and shown to an agent or a person.

list_sources, list_tables, describe_table, get_distinct_values (with value_cache, the values kept in memory),
find_rows, execute_sql, explain_sql, search_schema; shared by all: base (the result type, its hooks and
the data-block rendering), budget (the fit loop) and arguments (caps on what a call may ask for).
"""
