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
)
SELECT
  *
FROM _sec_employees AS employees
