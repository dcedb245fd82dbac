-- role: manager
-- dialect: spark
SELECT reason, COUNT(*) AS n FROM absence_records GROUP BY reason
-- expected:
WITH _sec_absence_records AS (
  SELECT
    `absence_id`,
    `employee_id`,
    `absence_date`,
    `reason`
  FROM `absence_records`
  WHERE
    employee_id IN (
      SELECT
        e.employee_id
      FROM `employees` AS e
      WHERE
        e.department = 'D042'
    )
  LIMIT 2147483647
)
SELECT
  reason,
  COUNT(*) AS n
FROM _sec_absence_records AS absence_records
GROUP BY
  reason
