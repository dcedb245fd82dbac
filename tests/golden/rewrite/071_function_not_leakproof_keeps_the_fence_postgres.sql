-- role: manager
-- dialect: postgres
SELECT name FROM employees WHERE ABS(manager_id) > 0
-- expected:
WITH _sec_employees AS MATERIALIZED (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "employees"
  WHERE
    department = 'D042'
)
SELECT
  name
FROM _sec_employees AS employees
WHERE
  ABS(manager_id) > 0
