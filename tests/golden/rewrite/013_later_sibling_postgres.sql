-- role: manager
-- dialect: postgres
WITH a AS (SELECT * FROM departments), departments AS (SELECT 1 AS one) SELECT * FROM a
-- expected:
WITH _sec_departments AS NOT MATERIALIZED (
  SELECT
    "dept_code",
    "dept_name",
    "budget"
  FROM "departments"
), a AS (
  SELECT
    *
  FROM _sec_departments AS departments
), departments_1 AS (
  SELECT
    1 AS one
)
SELECT
  *
FROM a
