-- role: manager
-- dialect: postgres
SELECT name FROM employees WHERE CAST(manager_id AS TEXT) = '1'
-- expected:
WITH _sec_employees AS MATERIALIZED (
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
  name
FROM _sec_employees AS employees
WHERE
  CAST(manager_id AS TEXT) = '1'
