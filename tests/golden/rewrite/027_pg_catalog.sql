-- role: manager
-- dialect: postgres
SELECT relname FROM pg_catalog.pg_class
-- expected:
error unknown_table: no table `pg_catalog.pg_class`
