-- role: manager
-- dialect: postgres
SELECT * FROM other.employees
-- expected:
error unknown_table: no table `other.employees`
