-- role: manager
-- dialect: sqlite
SELECT x.department, x.n FROM (SELECT department, COUNT(*) AS n FROM employees GROUP BY department) AS x
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
  x.department,
  x.n
FROM (
  SELECT
    department,
    COUNT(*) AS n
  FROM _sec_employees AS employees
  GROUP BY
    department
) AS x
