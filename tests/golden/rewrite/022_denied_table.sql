-- role: manager
-- dialect: sqlite
SELECT * FROM salaries
-- expected:
error unknown_table: no table `salaries`
