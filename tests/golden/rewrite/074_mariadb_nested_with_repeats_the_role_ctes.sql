-- role: manager
-- dialect: mysql
SELECT s.employee_id FROM (WITH x AS (SELECT employee_id FROM employees) SELECT employee_id FROM x) AS s
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
)
SELECT
  s.employee_id
FROM (
  WITH _sec_employees AS (
    SELECT
      `employee_id`,
      `name`,
      `department`,
      `manager_id`
    FROM `employees`
    WHERE
      department = 'D042'
  ), x AS (
    SELECT
      employee_id
    FROM _sec_employees AS employees
  )
  SELECT
    employee_id
  FROM x
) AS s
