-- role: manager
-- dialect: mysql
SELECT j.x, e.name FROM JSON_TABLE('[1, 2]', '$[*]' COLUMNS (x INT PATH '$')) AS j JOIN employees e ON e.employee_id = j.x
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
  j.x,
  e.name
FROM JSON_TABLE('[1, 2]', '$[*]' COLUMNS(x INT PATH '$')) AS j
JOIN _sec_employees AS e
  ON e.employee_id = j.x
