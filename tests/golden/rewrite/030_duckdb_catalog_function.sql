-- role: manager
-- dialect: duckdb
SELECT table_name FROM duckdb_tables()
-- expected:
error rejected: function `duckdb_tables` is not allowed for role `manager`
