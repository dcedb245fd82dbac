-- role: manager
-- dialect: postgres
SELECT 'salaries'::regclass
-- expected:
error rejected: casts to object identifier types are not allowed for role `manager`
