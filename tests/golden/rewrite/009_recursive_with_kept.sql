-- role: manager
-- dialect: postgres
WITH RECURSIVE chain(employee_id, depth) AS (SELECT employee_id, 0 FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.depth + 1 FROM employees e JOIN chain c ON e.manager_id = c.employee_id) SELECT * FROM chain
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
), chain(employee_id, depth) AS (
  SELECT
    employee_id,
    0
  FROM _sec_employees AS employees
  WHERE
    manager_id IS NULL
  UNION ALL
  SELECT
    e.employee_id,
    c.depth + 1
  FROM _sec_employees AS e
  JOIN chain AS c
    ON e.manager_id = c.employee_id
)
SELECT
  *
FROM chain
