-- role: manager
-- dialect: postgres
SELECT e.name FROM public.employees AS e
-- expected:
WITH _sec_employees AS NOT MATERIALIZED (
  SELECT
    "employee_id",
    "name",
    "department",
    "manager_id"
  FROM "employees"
  WHERE
    department = 'D042'
)
SELECT
  e.name
FROM _sec_employees AS e
