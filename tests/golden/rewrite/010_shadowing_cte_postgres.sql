-- role: manager
-- dialect: postgres
WITH employees AS (SELECT * FROM employees WHERE name LIKE 'A%') SELECT COUNT(*) FROM employees
-- expected:
WITH _sec_employees AS NOT MATERIALIZED (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "employees"
  WHERE
    department = 'D042'
), employees_1 AS (
  SELECT
    *
  FROM _sec_employees AS employees
  WHERE
    name LIKE 'A%'
)
SELECT
  COUNT(*)
FROM employees_1 AS employees
