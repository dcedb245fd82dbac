-- role: manager
-- dialect: postgres
WITH RECURSIVE employees AS (SELECT employee_id FROM employees UNION ALL SELECT employee_id FROM employees WHERE employee_id < 0) SELECT COUNT(*) FROM employees JOIN absence_records AS a ON a.employee_id = employees.employee_id
-- expected:
WITH RECURSIVE _sec_absence_records AS NOT MATERIALIZED (
  SELECT
    "absence_id",
    "employee_id",
    "absence_date",
    "reason"
  FROM "absence_records"
  WHERE
    employee_id IN (
      SELECT
        e.employee_id
      FROM "employees" AS e
      WHERE
        e.department = 'D042'
    )
), employees_1 AS (
  SELECT
    employee_id
  FROM employees_1 AS employees
  UNION ALL
  SELECT
    employee_id
  FROM employees_1 AS employees
  WHERE
    employee_id < 0
)
SELECT
  COUNT(*)
FROM employees_1 AS employees
JOIN _sec_absence_records AS a
  ON a.employee_id = employees.employee_id
