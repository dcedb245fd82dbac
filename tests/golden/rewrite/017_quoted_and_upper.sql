-- role: manager
-- dialect: sqlite
SELECT "EMPLOYEES".name FROM "EMPLOYEES" JOIN DEPARTMENTS ON DEPARTMENTS.dept_code = "EMPLOYEES".department
-- expected:
WITH _sec_employees AS (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "main"."employees"
  WHERE
    department = 'D042'
), _sec_departments AS (
  SELECT
    "dept_code",
    "dept_name",
    "budget"
  FROM "main"."departments"
)
SELECT
  "EMPLOYEES".name
FROM _sec_employees AS "EMPLOYEES"
JOIN _sec_departments AS DEPARTMENTS
  ON DEPARTMENTS.dept_code = "EMPLOYEES".department
