-- role: manager
-- dialect: postgres
WITH departments AS (SELECT 'D042' AS dept_code) SELECT e.name FROM employees AS e WHERE e.department IN (WITH departments AS (SELECT dept_code FROM departments) SELECT dept_code FROM departments)
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
), departments AS (
  SELECT
    'D042' AS dept_code
)
SELECT
  e.name
FROM _sec_employees AS e
WHERE
  e.department IN (
    WITH departments AS (
      SELECT
        dept_code
      FROM departments
    )
    SELECT
      dept_code
    FROM departments
  )
