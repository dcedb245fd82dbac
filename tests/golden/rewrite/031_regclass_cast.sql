-- role: manager
-- dialect: postgres
SELECT 'salaries'::regclass
-- expected:
error rejected: the type `REGCLASS` is not allowed for role `manager`: only built-in scalar types are
