-- role: manager
-- dialect: postgres
SELECT query_to_xml('SELECT * FROM salaries', true, false, '')
-- expected:
error rejected: function `query_to_xml` is not allowed for role `manager`
