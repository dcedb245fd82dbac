-- role: manager
-- dialect: mysql
SELECT COUNT(*) FROM employees WHERE 1 / (employee_id - 3) > 0
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
  LIMIT 18446744073709551615
)
SELECT
  COUNT(*)
FROM _sec_employees AS employees
WHERE
  1 / (
    employee_id - 3
  ) > 0
