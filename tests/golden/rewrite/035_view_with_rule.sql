-- role: analyst
-- dialect: sqlite
SELECT * FROM v_headcount ORDER BY headcount DESC
-- expected:
WITH _sec_v_headcount AS MATERIALIZED (
  SELECT
    "department",
    "headcount"
  FROM "main"."v_headcount"
  WHERE
    department <> 'D001'
  LIMIT -1
)
SELECT
  *
FROM _sec_v_headcount AS v_headcount
ORDER BY
  headcount DESC
