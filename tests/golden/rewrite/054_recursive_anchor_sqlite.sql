-- role: manager
-- dialect: sqlite
WITH RECURSIVE departments AS (SELECT * FROM departments UNION SELECT * FROM departments) SELECT * FROM departments
-- expected:
WITH RECURSIVE _sec_departments AS (
  SELECT
    "dept_code",
    "dept_name",
    "budget"
  FROM "main"."departments"
), departments_1 AS (
  SELECT
    *
  FROM _sec_departments AS departments
  UNION
  SELECT
    *
  FROM departments_1 AS departments
)
SELECT
  *
FROM departments_1 AS departments
