-- role: manager
-- dialect: sqlite
WITH sick AS (SELECT employee_id FROM absence_records WHERE reason = 'sick') SELECT e.name FROM employees e JOIN sick s ON s.employee_id = e.employee_id
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
), sick AS (
  SELECT
    employee_id
  FROM _sec_absence_records AS absence_records
  WHERE
    reason = 'sick'
)
SELECT
  e.name
FROM _sec_employees AS e
JOIN sick AS s
  ON s.employee_id = e.employee_id
