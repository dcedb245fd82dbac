-- role: manager
-- dialect: spark
SELECT * FROM parquet.`/data/employees`
-- expected:
error unknown_table: no table `parquet./data/employees`
