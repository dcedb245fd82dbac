-- role: manager
-- dialect: sqlite
SELECT e.name, m.name AS manager FROM employees e LEFT JOIN employees m ON e.manager_id = m.employee_id
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
  e.name,
  m.name AS manager
FROM _sec_employees AS e
LEFT JOIN _sec_employees AS m
  ON e.manager_id = m.employee_id
