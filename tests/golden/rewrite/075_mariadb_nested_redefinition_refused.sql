-- role: manager
-- dialect: mysql
WITH departments AS (SELECT 'X' AS dept_code), y AS (WITH departments AS (SELECT * FROM departments) SELECT * FROM departments) SELECT * FROM y
-- expected:
error rejected: the nested WITH redefines CTE `departments`, which mysql does not resolve consistently
