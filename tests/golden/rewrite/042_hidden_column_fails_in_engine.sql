-- role: manager
-- dialect: sqlite
SELECT name, salary FROM employees
-- expected:
WITH _sec_employees AS (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "main"."employees"
  WHERE
    department = 'D042'
)
SELECT
  name,
  salary
FROM _sec_employees AS employees
