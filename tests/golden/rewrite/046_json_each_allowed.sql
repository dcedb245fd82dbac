-- role: manager
-- dialect: sqlite
SELECT j.value FROM json_each('[1, 2]') AS j JOIN employees e ON e.employee_id = j.value
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
  j.value
FROM JSON_EACH('[1, 2]') AS j
JOIN _sec_employees AS e
  ON e.employee_id = j.value
