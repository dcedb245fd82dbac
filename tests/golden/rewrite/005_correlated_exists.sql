-- role: manager
-- dialect: sqlite
SELECT d.dept_name FROM departments d WHERE EXISTS (SELECT 1 FROM employees e WHERE e.department = d.dept_code)
-- expected:
WITH _sec_departments AS (
  SELECT
    "dept_code",
    "dept_name",
    "budget"
  FROM "main"."departments"
), _sec_employees AS (
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
  d.dept_name
FROM _sec_departments AS d
WHERE
  EXISTS(
    SELECT
      1
    FROM _sec_employees AS e
    WHERE
      e.department = d.dept_code
  )
