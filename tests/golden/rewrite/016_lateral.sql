-- role: manager
-- dialect: postgres
SELECT d.dept_code, top.name FROM departments d CROSS JOIN LATERAL (SELECT e.name FROM employees e WHERE e.department = d.dept_code ORDER BY e.employee_id LIMIT 1) AS top
-- expected:
WITH _sec_departments AS NOT MATERIALIZED (
  SELECT
    "dept_code",
    "dept_name",
    "budget"
  FROM "departments"
), _sec_employees AS MATERIALIZED (
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
  d.dept_code,
  top.name
FROM _sec_departments AS d
CROSS JOIN LATERAL (
  SELECT
    e.name
  FROM _sec_employees AS e
  WHERE
    e.department = d.dept_code
  ORDER BY
    e.employee_id
  LIMIT 1
) AS top
