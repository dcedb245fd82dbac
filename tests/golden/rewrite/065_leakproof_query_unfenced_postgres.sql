-- role: manager
-- dialect: postgres
SELECT e.name, a.absence_date FROM employees AS e JOIN absence_records AS a ON a.employee_id = e.employee_id WHERE a.reason LIKE 'si%' AND e.name IN ('Ada', 'Bob') AND NOT a.absence_date IS NULL
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
  a.absence_date
FROM _sec_employees AS e
JOIN _sec_absence_records AS a
  ON a.employee_id = e.employee_id
WHERE
  a.reason LIKE 'si%' AND e.name IN ('Ada', 'Bob') AND NOT a.absence_date IS NULL
