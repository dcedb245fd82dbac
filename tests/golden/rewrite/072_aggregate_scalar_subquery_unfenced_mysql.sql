-- role: manager
-- dialect: mysql
SELECT e.name FROM employees AS e WHERE e.employee_id = (SELECT MAX(a.employee_id) FROM absence_records AS a WHERE a.reason = 'sick')
-- expected:
WITH _sec_employees AS (
  SELECT
    `employee_id`,
    `name`,
    `department`,
    `manager_id`
  FROM `employees`
  WHERE
    department = 'D042'
), _sec_absence_records AS (
  SELECT
    `absence_id`,
    `employee_id`,
    `absence_date`,
    `reason`
  FROM `absence_records`
  WHERE
    employee_id IN (
      SELECT
        e.employee_id
      FROM `employees` AS e
      WHERE
        e.department = 'D042'
    )
)
SELECT
  e.name
FROM _sec_employees AS e
WHERE
  e.employee_id = (
    SELECT
      MAX(a.employee_id)
    FROM _sec_absence_records AS a
    WHERE
      a.reason = 'sick'
  )
