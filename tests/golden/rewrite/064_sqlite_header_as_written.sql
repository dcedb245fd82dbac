-- role: manager
-- dialect: sqlite
SELECT COUNT(*) * 100 / (SELECT COUNT(*) FROM employees), MAX(reason) FROM absence_records
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
), _sec_absence_records AS (
  SELECT
    "absence_id",
    "employee_id",
    "absence_date",
    "reason"
  FROM "main"."absence_records"
  WHERE
    employee_id IN (
      SELECT
        e.employee_id
      FROM "main"."employees" AS e
      WHERE
        e.department = 'D042'
    )
)
SELECT
  COUNT(*) * 100 / (
    SELECT
      COUNT(*)
    FROM _sec_employees AS employees
  ) AS "COUNT(*) * 100 / (SELECT COUNT(*) FROM employees)",
  MAX(reason)
FROM _sec_absence_records AS absence_records
