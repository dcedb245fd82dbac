-- role: analyst
-- dialect: sqlite
SELECT * FROM v_headcount ORDER BY headcount DESC
-- expected:
WITH _sec_v_headcount AS (
  SELECT
    "department",
    "headcount"
  FROM "main"."v_headcount"
  WHERE
    department <> 'D001'
)
SELECT
  *
FROM _sec_v_headcount AS v_headcount
ORDER BY
  headcount DESC
