-- role: manager
-- dialect: postgres
SELECT name FROM employees TABLESAMPLE SYSTEM (50)
-- expected:
error rejected: TABLESAMPLE cannot apply to `employees` for role `manager`: the role reads the table through its filtered view, which engines cannot sample
