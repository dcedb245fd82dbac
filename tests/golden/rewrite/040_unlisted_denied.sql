-- role: analyst
-- dialect: sqlite
SELECT * FROM absence_records
-- expected:
error unknown_table: no table `absence_records`
