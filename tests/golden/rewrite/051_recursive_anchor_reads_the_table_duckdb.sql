-- role: manager
-- dialect: duckdb
WITH RECURSIVE employees AS (SELECT * FROM employees) SELECT * FROM employees
-- expected:
WITH RECURSIVE _sec_employees AS MATERIALIZED (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "employees"
  WHERE
    department = 'D042'
), employees_1 AS (
  SELECT
    *
  FROM _sec_employees AS employees
)
SELECT
  *
FROM employees_1 AS employees
