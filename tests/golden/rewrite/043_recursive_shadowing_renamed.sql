-- role: manager
-- dialect: postgres
WITH RECURSIVE employees(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM employees WHERE n < 3) SELECT * FROM absence_records, employees
-- expected:
error rejected: a recursive WITH may not define a CTE named like the table `employees`
