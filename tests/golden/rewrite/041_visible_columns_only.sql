-- role: analyst
-- dialect: sqlite
SELECT * FROM employees JOIN departments ON dept_code = department
-- expected:
WITH _sec_employees AS (
  SELECT
    "employee_id",
    "department"
  FROM "main"."employees"
), _sec_departments AS (
  SELECT
    "dept_code",
    "dept_name"
  FROM "main"."departments"
)
SELECT
  *
FROM _sec_employees AS employees
JOIN _sec_departments AS departments
  ON dept_code = department
