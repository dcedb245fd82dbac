-- role: manager
-- dialect: mysql
WITH employees AS (SELECT 1 AS a) SELECT * FROM (WITH x AS (SELECT * FROM employees) SELECT * FROM x) AS s
-- expected:
error rejected: `employees` may name a CTE or a table here: the CTEs of a WITH inside a subquery cannot read the CTEs of an outer WITH on mysql (MariaDB reads a table of that name instead)
