-- role: manager
-- dialect: sqlite
SELECT (SELECT COUNT(*) FROM (WITH employees AS (SELECT 1 AS x) SELECT * FROM employees)) AS inner_count, COUNT(*) AS real_count FROM employees
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
)
SELECT
  (
    SELECT
      COUNT(*)
    FROM (
      WITH employees_1 AS (
        SELECT
          1 AS x
      )
      SELECT
        *
      FROM employees_1 AS employees
    )
  ) AS inner_count,
  COUNT(*) AS real_count
FROM _sec_employees AS employees
