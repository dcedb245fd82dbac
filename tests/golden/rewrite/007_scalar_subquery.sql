-- role: manager
-- dialect: sqlite
SELECT dept_name, (SELECT COUNT(*) FROM employees WHERE department = dept_code) AS headcount FROM departments
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
), _sec_departments AS (
  SELECT
    "dept_code",
    "dept_name",
    "budget"
  FROM "main"."departments"
)
SELECT
  dept_name,
  (
    SELECT
      COUNT(*)
    FROM _sec_employees AS employees
    WHERE
      department = dept_code
  ) AS headcount
FROM _sec_departments AS departments
