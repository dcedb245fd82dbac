-- role: manager
-- dialect: postgres
SELECT CAST(COUNT(a.absence_id) AS REAL) * 100 / COUNT(*) FROM employees AS e LEFT JOIN absence_records AS a ON a.employee_id = e.employee_id WHERE e.department = 'D042' HAVING COUNT(*) / 2 > 0
-- expected:
WITH _sec_employees AS NOT MATERIALIZED (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "employees"
  WHERE
    department = 'D042'
), _sec_absence_records AS NOT MATERIALIZED (
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
)
SELECT
  CAST(COUNT(a.absence_id) AS REAL) * 100 / COUNT(*)
FROM _sec_employees AS e
LEFT JOIN _sec_absence_records AS a
  ON a.employee_id = e.employee_id
WHERE
  e.department = 'D042'
HAVING
  COUNT(*) / 2 > 0
