-- role: manager
-- dialect: spark
SELECT e.name, d.dept_name, e.salary FROM employees AS e JOIN departments AS d ON e.department = d.dept_code
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
), _sec_departments AS (
  SELECT
    `dept_code`,
    `dept_name`,
    `budget`
  FROM `departments`
)
SELECT
  e.name,
  d.dept_name,
  e.salary
FROM _sec_employees AS e
JOIN _sec_departments AS d
  ON e.department = d.dept_code
