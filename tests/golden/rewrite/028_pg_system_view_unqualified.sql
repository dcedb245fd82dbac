-- role: manager
-- dialect: postgres
SELECT tablename FROM pg_tables
-- expected:
error unknown_table: no table `pg_tables`
