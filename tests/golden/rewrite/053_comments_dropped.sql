-- role: manager
-- dialect: mysql
SELECT name /* note */ FROM employees -- trailing
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
  name
FROM _sec_employees AS employees
