-- role: manager
-- dialect: postgres
WITH RECURSIVE employees(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM employees WHERE n < 3) SELECT * FROM employees
-- expected:
WITH RECURSIVE employees(n) AS (
  SELECT
    1
  UNION ALL
  SELECT
    n + 1
  FROM employees
  WHERE
    n < 3
)
SELECT
  *
FROM employees
