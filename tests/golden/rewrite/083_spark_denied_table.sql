-- role: manager
-- dialect: spark
SELECT * FROM salaries
-- expected:
error unknown_table: no table `salaries`
