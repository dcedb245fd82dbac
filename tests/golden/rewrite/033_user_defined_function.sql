-- role: manager
-- dialect: postgres
SELECT leak_salaries() FROM employees
-- expected:
error rejected: function `leak_salaries` is not allowed for role `manager`: it is not on this engine's list of allowed functions
