-- role: manager
-- dialect: spark
SELECT `e`.`name` FROM `employees` AS `e` WHERE `e`.`manager_id` IS NULL
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
  `e`.`name`
FROM _sec_employees AS `e`
WHERE
  `e`.`manager_id` IS NULL
