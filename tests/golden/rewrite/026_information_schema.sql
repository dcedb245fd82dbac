-- role: manager
-- dialect: postgres
SELECT column_name FROM information_schema.columns WHERE table_name = 'employees'
-- expected:
error unknown_table: no table `information_schema.columns`
