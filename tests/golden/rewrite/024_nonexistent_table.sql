-- role: manager
-- dialect: sqlite
SELECT * FROM payroll
-- expected:
error unknown_table: no table `payroll`
