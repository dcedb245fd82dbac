-- role: analyst
-- dialect: spark
SELECT d.dept_name, COUNT(e.employee_id) AS n FROM departments AS d LEFT JOIN employees AS e ON e.department = d.dept_code GROUP BY d.dept_name
-- expected:
WITH _sec_departments AS (
  SELECT
    `dept_code`,
    `dept_name`
  FROM `departments`
), _sec_employees AS (
  SELECT
    `employee_id`,
    `department`
  FROM `employees`
)
SELECT
  d.dept_name,
  COUNT(e.employee_id) AS n
FROM _sec_departments AS d
LEFT JOIN _sec_employees AS e
  ON e.department = d.dept_code
GROUP BY
  d.dept_name
