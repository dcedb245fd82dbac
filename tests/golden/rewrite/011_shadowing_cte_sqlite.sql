-- role: manager
-- dialect: sqlite
WITH departments AS (SELECT 'X' AS dept_code) SELECT d.dept_code, e.name FROM departments d JOIN employees e ON e.department = d.dept_code
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
), departments AS (
  SELECT
    'X' AS dept_code
)
SELECT
  d.dept_code,
  e.name
FROM departments AS d
JOIN _sec_employees AS e
  ON e.department = d.dept_code
