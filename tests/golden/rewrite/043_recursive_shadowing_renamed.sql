-- role: manager
-- dialect: postgres
WITH RECURSIVE employees(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM employees WHERE n < 3) SELECT * FROM absence_records, employees
-- expected:
WITH RECURSIVE _sec_absence_records AS MATERIALIZED (
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
), employees_1(n) AS (
  SELECT
    1
  UNION ALL
  SELECT
    n + 1
  FROM employees_1 AS employees
  WHERE
    n < 3
)
SELECT
  *
FROM _sec_absence_records AS absence_records, employees_1 AS employees
