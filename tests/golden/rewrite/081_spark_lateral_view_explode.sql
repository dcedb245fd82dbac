-- role: manager
-- dialect: spark
SELECT e.name, tag FROM employees AS e LATERAL VIEW explode(array('a', 'b')) t AS tag
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
  e.name,
  tag
FROM _sec_employees AS e
LATERAL VIEW
EXPLODE(ARRAY('a', 'b')) t AS tag
