-- role: manager
-- dialect: postgres
SELECT e.name FROM employees AS e WHERE (SELECT a.reason FROM absence_records AS a WHERE a.employee_id = e.employee_id) = 'sick'
-- expected:
WITH _sec_employees AS MATERIALIZED (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "employees"
  WHERE
    department = 'D042'
), _sec_absence_records AS MATERIALIZED (
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
  e.name
FROM _sec_employees AS e
WHERE
  (
    SELECT
      a.reason
    FROM _sec_absence_records AS a
    WHERE
      a.employee_id = e.employee_id
  ) = 'sick'
