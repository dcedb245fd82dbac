-- role: manager
-- dialect: sqlite
SELECT name, sql FROM sqlite_master
-- expected:
error unknown_table: no table `sqlite_master`
