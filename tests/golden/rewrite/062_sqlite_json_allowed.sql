-- role: manager
-- dialect: sqlite
SELECT json('[1, 2]') AS numbers, json_type('{"a": 1}', '$.a') AS kind, name FROM employees
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
  JSON('[1, 2]') AS numbers,
  JSON_TYPE('{"a": 1}', '$.a') AS kind,
  name
FROM _sec_employees AS employees
