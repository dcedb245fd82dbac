-- role: manager
-- dialect: sqlite
SELECT name, department, ROW_NUMBER() OVER (PARTITION BY department ORDER BY employee_id) AS rn FROM employees
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
  department,
  ROW_NUMBER() OVER (PARTITION BY department ORDER BY employee_id) AS rn
FROM _sec_employees AS employees
