-- role: manager
-- dialect: duckdb
SELECT g.generate_series, COUNT(e.employee_id) FROM generate_series(1, 3) AS g LEFT JOIN employees e ON e.employee_id = g.generate_series GROUP BY 1
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
  g.generate_series,
  COUNT(e.employee_id)
FROM GENERATE_SERIES(1, 3) AS g
LEFT JOIN _sec_employees AS e
  ON e.employee_id = g.generate_series
GROUP BY
  1
