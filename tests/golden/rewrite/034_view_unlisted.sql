-- role: manager
-- dialect: sqlite
SELECT * FROM v_headcount
-- expected:
error unknown_table: no table `v_headcount`
