-- role: manager
-- dialect: postgres
SELECT leak_salaries() FROM employees
-- expected:
error rejected: function `leak_salaries` is not allowed for role `manager`
