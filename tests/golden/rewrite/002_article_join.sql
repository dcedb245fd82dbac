-- role: manager
-- dialect: sqlite
SELECT COUNT(DISTINCT a.employee_id) AS absent_count FROM absence_records a JOIN employees e ON a.employee_id = e.employee_id WHERE e.department = 'D042' AND a.absence_date >= '2025-11-01'
-- expected:
WITH _sec_absence_records AS (
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
), _sec_employees AS (
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
  COUNT(DISTINCT a.employee_id) AS absent_count
FROM _sec_absence_records AS a
JOIN _sec_employees AS e
  ON a.employee_id = e.employee_id
WHERE
  e.department = 'D042' AND a.absence_date >= '2025-11-01'
