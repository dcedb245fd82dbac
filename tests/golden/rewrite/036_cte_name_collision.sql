-- role: manager
-- dialect: sqlite
WITH _sec_employees AS (SELECT 1 AS x) SELECT * FROM employees, _sec_employees
-- expected:
WITH _sec_employees_1 AS (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "main"."employees"
  WHERE
    department = 'D042'
), _sec_employees AS (
  SELECT
    1 AS x
)
SELECT
  *
FROM _sec_employees_1 AS employees
CROSS JOIN _sec_employees
