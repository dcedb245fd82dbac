-- role: manager
-- dialect: postgres
SELECT t.value, e.name FROM jsonb_array_elements_text('["Ada", "Cy"]') AS t JOIN employees e ON e.name = t.value
-- expected:
WITH _sec_employees AS MATERIALIZED (
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
  t.value,
  e.name
FROM JSONB_ARRAY_ELEMENTS_TEXT('["Ada", "Cy"]') AS t
JOIN _sec_employees AS e
  ON e.name = t.value
