-- role: manager
-- dialect: spark
SELECT reflect('java.util.UUID', 'randomUUID') AS u FROM employees
-- expected:
error rejected: function `reflect` is not allowed for role `manager`: it calls a Java method of the server's JVM by name, which runs any code there
