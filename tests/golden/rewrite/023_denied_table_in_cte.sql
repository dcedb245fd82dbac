-- role: manager
-- dialect: sqlite
WITH s AS (SELECT * FROM salaries) SELECT COUNT(*) FROM s
-- expected:
error unknown_table: no table `salaries`
