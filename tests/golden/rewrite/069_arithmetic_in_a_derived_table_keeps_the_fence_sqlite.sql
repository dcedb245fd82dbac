-- role: manager
-- dialect: sqlite
SELECT d.x FROM (SELECT employee_id * 2 AS x FROM employees) AS d WHERE d.x > 2
-- expected:
WITH _sec_employees AS MATERIALIZED (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "main"."employees"
  WHERE
    department = 'D042'
  LIMIT -1
)
SELECT
  d.x
FROM (
  SELECT
    employee_id * 2 AS x
  FROM _sec_employees AS employees
) AS d
WHERE
  d.x > 2
