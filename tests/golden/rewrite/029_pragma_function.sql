-- role: manager
-- dialect: sqlite
SELECT name FROM pragma_table_info('employees')
-- expected:
error rejected: function `pragma_table_info` is not allowed for role `manager`
