-- role: manager
-- dialect: sqlite
SELECT d.dept_code FROM departments d JOIN employees e ON e.department = d.dept_code AND e.employee_id = (SELECT MIN(employee_id) FROM absence_records)
-- expected:
WITH _sec_departments AS (
  SELECT
    "dept_code",
    "dept_name",
    "budget"
  FROM "main"."departments"
), _sec_employees AS (
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
  d.dept_code
FROM _sec_departments AS d
JOIN _sec_employees AS e
  ON e.department = d.dept_code
  AND e.employee_id = (
    SELECT
      MIN(employee_id)
    FROM _sec_absence_records AS absence_records
  )
