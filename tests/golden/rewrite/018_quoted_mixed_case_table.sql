-- role: manager
-- dialect: postgres
SELECT p.title FROM "Projects" p
-- expected:
WITH _sec_projects AS NOT MATERIALIZED (
  SELECT
    "project_id",
    "dept_code",
    "title"
  FROM "Projects"
)
SELECT
  p.title
FROM _sec_projects AS p
