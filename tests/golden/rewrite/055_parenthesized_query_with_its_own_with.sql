-- role: manager
-- dialect: postgres
(WITH w AS (SELECT 1 AS one) SELECT e.name FROM employees AS e, w)
-- expected:
(
  WITH _sec_employees AS NOT MATERIALIZED (
    SELECT
      "employee_id",
      "name",
      "department",
      "manager_id"
    FROM "employees"
    WHERE
      department = 'D042'
  ), w AS (
    SELECT
      1 AS one
  )
  SELECT
    e.name
  FROM _sec_employees AS e, w
)
