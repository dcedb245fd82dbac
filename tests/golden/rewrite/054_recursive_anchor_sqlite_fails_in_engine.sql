-- role: manager
-- dialect: sqlite
WITH RECURSIVE departments AS (SELECT * FROM departments UNION SELECT * FROM departments) SELECT * FROM departments
-- expected:
WITH RECURSIVE departments AS (
  SELECT
    *
  FROM departments
  UNION
  SELECT
    *
  FROM departments
)
SELECT
  *
FROM departments
