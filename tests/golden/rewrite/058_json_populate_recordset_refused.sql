-- role: manager
-- dialect: postgres
SELECT * FROM json_populate_recordset(NULL::employees, '[{"name": "x"}]')
-- expected:
error rejected: function `json_populate_recordset` is not allowed for role `manager`: it is not on this engine's list of allowed functions
