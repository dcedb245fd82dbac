-- role: manager
-- dialect: spark
SELECT * FROM employees
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
  LIMIT 2147483647
)
SELECT
  *
FROM _sec_employees AS employees
