-- role: manager
-- dialect: sqlite
SELECT reason, COUNT(*) AS n FROM absence_records GROUP BY reason HAVING COUNT(*) > 1 ORDER BY n DESC LIMIT 5
-- expected:
WITH _sec_absence_records AS (
  SELECT
    "absence_id",
    "employee_id",
    "absence_date",
    "reason"
  FROM "main"."absence_records"
  WHERE
    employee_id IN (
      SELECT
        e.employee_id
      FROM "main"."employees" AS e
      WHERE
        e.department = 'D042'
    )
)
SELECT
  reason,
  COUNT(*) AS n
FROM _sec_absence_records AS absence_records
GROUP BY
  reason
HAVING
  COUNT(*) > 1
ORDER BY
  n DESC
LIMIT 5
