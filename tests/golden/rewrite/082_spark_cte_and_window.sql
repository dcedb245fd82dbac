-- role: manager
-- dialect: spark
WITH ranked AS (SELECT name, department, row_number() OVER (PARTITION BY department ORDER BY employee_id) AS r FROM employees) SELECT name FROM ranked WHERE r = 1
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
), ranked AS (
  SELECT
    name,
    department,
    ROW_NUMBER() OVER (PARTITION BY department ORDER BY employee_id) AS r
  FROM _sec_employees AS employees
)
SELECT
  name
FROM ranked
WHERE
  r = 1
