-- role: manager
-- dialect: mysql
SELECT e.name, a.absence_date FROM absence_records AS a INNER JOIN employees AS e ON a.employee_id = e.employee_id WHERE a.reason = 'sick' AND a.absence_id * 2 > 1
-- expected:
WITH _sec_absence_records AS (
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
  LIMIT 18446744073709551615
), _sec_employees AS (
  SELECT
    `employee_id`,
    `name`,
    `department`,
    `manager_id`
  FROM `employees`
  WHERE
    department = 'D042'
  LIMIT 18446744073709551615
)
SELECT
  e.name,
  a.absence_date
FROM _sec_absence_records AS a
STRAIGHT_JOIN _sec_employees AS e
  ON a.employee_id = e.employee_id
WHERE
  a.reason = 'sick' AND a.absence_id * 2 > 1
