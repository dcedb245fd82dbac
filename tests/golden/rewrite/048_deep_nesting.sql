-- role: manager
-- dialect: postgres
SELECT * FROM (WITH x AS (SELECT * FROM (SELECT employee_id FROM absence_records WHERE employee_id IN (SELECT employee_id FROM employees)) AS y) SELECT * FROM x) AS z
-- expected:
WITH _sec_absence_records AS NOT MATERIALIZED (
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
), _sec_employees AS NOT MATERIALIZED (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "employees"
  WHERE
    department = 'D042'
)
SELECT
  *
FROM (
  WITH x AS (
    SELECT
      *
    FROM (
      SELECT
        employee_id
      FROM _sec_absence_records AS absence_records
      WHERE
        employee_id IN (
          SELECT
            employee_id
          FROM _sec_employees AS employees
        )
    ) AS y
  )
  SELECT
    *
  FROM x
) AS z
