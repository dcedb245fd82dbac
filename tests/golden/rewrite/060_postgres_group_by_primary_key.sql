-- role: manager
-- dialect: postgres
SELECT e.name, COUNT(a.absence_id) AS absences FROM employees AS e JOIN absence_records AS a ON a.employee_id = e.employee_id GROUP BY e.employee_id HAVING COUNT(*) > 0 ORDER BY e.name
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
  e.name,
  COUNT(a.absence_id) AS absences
FROM _sec_employees AS e
JOIN _sec_absence_records AS a
  ON a.employee_id = e.employee_id
GROUP BY
  e.employee_id,
  e.name
HAVING
  COUNT(*) > 0
ORDER BY
  e.name
