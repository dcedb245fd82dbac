-- role: admin
-- dialect: sqlite
SELECT * FROM salaries JOIN employees USING (employee_id)
-- expected:
SELECT
  *
FROM salaries
JOIN employees
  USING (employee_id)
