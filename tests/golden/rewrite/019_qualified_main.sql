-- role: manager
-- dialect: sqlite
SELECT main.employees.name FROM main.employees
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
  employees.name
FROM _sec_employees AS employees
