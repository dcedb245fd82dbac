-- role: manager
-- dialect: duckdb
SELECT * FROM read_csv('/etc/passwd')
-- expected:
error rejected: function `read_csv` is not allowed for role `manager`
