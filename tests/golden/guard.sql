-- Guard verdicts: one case per block, blocks separated by a blank line.
-- Each case opens with `-- case:` (a short name), `-- dialect:` (sqlglot dialect) and
-- `-- expect: allow` or `-- expect: reject: <part of the message>` (`expect: syntax: ...` for parse errors).
-- The SQL follows, on one or more lines; header lines before the first case (like these) are ignored.

-- case: bird_cast_ratio
-- dialect: sqlite
-- expect: allow
SELECT CAST(SUM(CASE WHEN T2.gender = 'F' THEN 1 ELSE 0 END) AS REAL) * 100 / COUNT(T2.client_id)
FROM district AS T1
INNER JOIN client AS T2 ON T1.district_id = T2.district_id
WHERE T1.A3 = 'south Bohemia';

-- case: bird_julianday_age
-- dialect: sqlite
-- expect: allow
SELECT T1.name, julianday('now') - julianday(T1.birthday) AS age_days
FROM Patient AS T1
WHERE T1.SEX = 'M' AND T1.Admission = '+'
ORDER BY age_days DESC
LIMIT 1

-- case: bird_strftime_group
-- dialect: sqlite
-- expect: allow
SELECT strftime('%Y', T1.date) AS year, COUNT(*) AS n
FROM trans AS T1
WHERE T1.type = 'PRIJEM' AND strftime('%Y', T1.date) BETWEEN '1995' AND '1997'
GROUP BY year
HAVING COUNT(*) > 10

-- case: bird_backtick_columns
-- dialect: sqlite
-- expect: allow
SELECT `Free Meal Count (K-12)` / `Enrollment (K-12)` FROM frpm WHERE `County Name` = 'Alameda' ORDER BY 1 DESC LIMIT 3

-- case: bird_iif_total_printf
-- dialect: sqlite
-- expect: allow
SELECT printf('%.2f', total(iif(T.Currency = 'EUR', T.Amount, 0))) AS eur, substr(T.Date, 1, 4) AS yr
FROM transactions_1k AS T
GROUP BY yr

-- case: bird_window_rank
-- dialect: sqlite
-- expect: allow
SELECT name, score, RANK() OVER (PARTITION BY league ORDER BY score DESC) AS rnk,
       AVG(score) OVER (ORDER BY season ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS moving
FROM results

-- case: bird_cte_subquery
-- dialect: sqlite
-- expect: allow
WITH top AS (
  SELECT account_id, SUM(amount) AS total FROM loan GROUP BY account_id
)
SELECT a.account_id, t.total
FROM account AS a JOIN top AS t ON a.account_id = t.account_id
WHERE t.total > (SELECT AVG(total) FROM top)
  AND a.district_id IN (SELECT district_id FROM district WHERE A2 LIKE 'Pra%')

-- case: recursive_cte
-- dialect: sqlite
-- expect: allow
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 10) SELECT x FROM n

-- case: union_intersect_except
-- dialect: sqlite
-- expect: allow
SELECT id FROM a UNION SELECT id FROM b INTERSECT SELECT id FROM c EXCEPT SELECT id FROM d

-- case: exists_and_case
-- dialect: sqlite
-- expect: allow
SELECT COUNT(DISTINCT m.id), COALESCE(MAX(m.rating), 0), NULLIF(m.genre, '')
FROM movies m
WHERE EXISTS (SELECT 1 FROM ratings r WHERE r.movie_id = m.id AND r.score IS NOT NULL)
  AND m.title GLOB 'The*' AND m.year NOT BETWEEN 1990 AND 1999

-- case: group_concat_json
-- dialect: sqlite
-- expect: allow
SELECT group_concat(name, ', '), json_extract(meta, '$.tags[0]'), instr(name, 'a'), length(name), round(avg(x), 2)
FROM items GROUP BY category

-- case: json_each_table_function
-- dialect: sqlite
-- expect: allow
SELECT j.value FROM items, json_each(items.tags) AS j WHERE j.value = 'red'

-- case: single_quoted_table_name_sqlite
-- dialect: sqlite
-- expect: allow
SELECT * FROM 'orders' LIMIT 5

-- case: trailing_semicolon
-- dialect: sqlite
-- expect: allow
SELECT 1;

-- case: comment_with_fake_statement
-- dialect: sqlite
-- expect: allow
SELECT 1 /*; DROP TABLE t */

-- case: line_comment_with_fake_statement
-- dialect: sqlite
-- expect: allow
SELECT name FROM users -- ; DELETE FROM users

-- case: parenthesised_query
-- dialect: sqlite
-- expect: allow
(SELECT 1) UNION ALL (SELECT 2)

-- case: values_in_from
-- dialect: sqlite
-- expect: allow
SELECT v.a FROM (VALUES (1), (2)) AS v(a)

-- case: sqlite_delete
-- dialect: sqlite
-- expect: reject: `DELETE` is not allowed: only read-only queries
DELETE FROM users WHERE id = 1

-- case: sqlite_insert
-- dialect: sqlite
-- expect: reject: `INSERT` is not allowed
INSERT INTO users (name) VALUES ('x')

-- case: sqlite_insert_select
-- dialect: sqlite
-- expect: reject: `INSERT` is not allowed
INSERT INTO archive SELECT * FROM users

-- case: sqlite_replace_into
-- dialect: sqlite
-- expect: reject: `REPLACE` is not allowed
REPLACE INTO users VALUES (1, 'x')

-- case: sqlite_update
-- dialect: sqlite
-- expect: reject: `UPDATE` is not allowed
UPDATE users SET name = 'x'

-- case: sqlite_drop
-- dialect: sqlite
-- expect: reject: `DROP` is not allowed
DROP TABLE users

-- case: sqlite_create_table_as
-- dialect: sqlite
-- expect: reject: `CREATE` is not allowed
CREATE TABLE copy AS SELECT * FROM users

-- case: sqlite_create_view
-- dialect: sqlite
-- expect: reject: `CREATE` is not allowed
CREATE VIEW v AS SELECT 1

-- case: sqlite_alter
-- dialect: sqlite
-- expect: reject: `ALTER` is not allowed
ALTER TABLE users ADD COLUMN age INTEGER

-- case: sqlite_stacked
-- dialect: sqlite
-- expect: reject: 2 statements were sent
SELECT 1; DROP TABLE x

-- case: sqlite_stacked_two_selects
-- dialect: sqlite
-- expect: reject: 2 statements were sent
SELECT 1; SELECT 2;

-- case: sqlite_double_semicolon
-- dialect: sqlite
-- expect: allow
SELECT 1;;

-- case: comment_after_semicolon
-- dialect: sqlite
-- expect: allow
SELECT name FROM users;
-- the agent explains its query here; DROP TABLE users

-- case: sqlite_only_semicolon
-- dialect: sqlite
-- expect: reject: The SQL is empty
;

-- case: sqlite_pragma
-- dialect: sqlite
-- expect: reject: `PRAGMA` is not allowed
PRAGMA writable_schema = 1

-- case: sqlite_pragma_table_info
-- dialect: sqlite
-- expect: reject: `PRAGMA` is not allowed
PRAGMA table_info(users)

-- case: sqlite_pragma_function_in_from
-- dialect: sqlite
-- expect: reject: table function `pragma_table_info()` is not allowed in FROM
SELECT name FROM pragma_table_info('users')

-- case: sqlite_attach
-- dialect: sqlite
-- expect: reject: `ATTACH` is not allowed
ATTACH DATABASE '/tmp/evil.db' AS evil

-- case: sqlite_detach
-- dialect: sqlite
-- expect: reject: `DETACH` is not allowed
DETACH DATABASE main

-- case: sqlite_vacuum_into
-- dialect: sqlite
-- expect: reject: `VACUUM` is not allowed
VACUUM INTO '/tmp/copy.db'

-- case: sqlite_reindex
-- dialect: sqlite
-- expect: reject: `REINDEX` is not allowed
REINDEX users

-- case: sqlite_begin
-- dialect: sqlite
-- expect: reject: `BEGIN` is not allowed
BEGIN TRANSACTION

-- case: sqlite_commit
-- dialect: sqlite
-- expect: reject: `COMMIT` is not allowed
COMMIT

-- case: sqlite_explain
-- dialect: sqlite
-- expect: reject: `EXPLAIN` is not allowed
EXPLAIN QUERY PLAN SELECT * FROM users

-- case: sqlite_delete_in_cte
-- dialect: sqlite
-- expect: reject: `DELETE` is not allowed
WITH gone AS (DELETE FROM users RETURNING *) SELECT * FROM gone

-- case: sqlite_load_extension
-- dialect: sqlite
-- expect: reject: `load_extension()` is not allowed: it loads code
SELECT load_extension('/tmp/evil.so')

-- case: sqlite_load_extension_uppercase_nested
-- dialect: sqlite
-- expect: reject: `load_extension()` is not allowed
SELECT name FROM users WHERE id IN (SELECT LOAD_EXTENSION('x') FROM users)

-- case: sqlite_readfile
-- dialect: sqlite
-- expect: reject: `readfile()` is not allowed: it reads or writes files
SELECT readfile('/etc/passwd')

-- case: sqlite_writefile
-- dialect: sqlite
-- expect: reject: `writefile()` is not allowed
SELECT writefile('/tmp/x', 'data')

-- case: sqlite_fts3_tokenizer
-- dialect: sqlite
-- expect: reject: `fts3_tokenizer()` is not allowed
SELECT fts3_tokenizer('simple')

-- case: sqlite_edit
-- dialect: sqlite
-- expect: reject: `edit()` is not allowed
SELECT edit('text', 'vi')

-- case: sqlite_fsdir_table
-- dialect: sqlite
-- expect: reject: `fsdir()` is not allowed
SELECT name FROM fsdir('/')

-- case: sqlite_file_table_literal
-- dialect: sqlite
-- expect: reject: `/etc/passwd` is not allowed as a table
SELECT * FROM '/etc/passwd'

-- case: sqlite_fullwidth_semicolon
-- dialect: sqlite
-- expect: syntax: Syntax error at line 1
SELECT 1；DROP TABLE t

-- case: sqlite_fullwidth_semicolon_alone
-- dialect: sqlite
-- expect: allow
SELECT 1；

-- case: sqlite_not_a_query
-- dialect: sqlite
-- expect: reject: `CHECKPOINT` is not allowed
CHECKPOINT

-- case: sqlite_nested_comment_is_not_nested
-- dialect: sqlite
-- expect: reject: `load_extension()` is not allowed
SELECT 1 /* /* */ , load_extension('x') --*/

-- case: sqlite_backslash_is_not_an_escape
-- dialect: sqlite
-- expect: reject: `load_extension()` is not allowed
SELECT '\', load_extension('x') --'

-- case: pg_cast_ilike
-- dialect: postgres
-- expect: allow
SELECT id::text, created_at::date, price::numeric(10, 2)
FROM orders
WHERE customer_name ILIKE '%smith%' AND status <> 'cancelled'

-- case: pg_distinct_on
-- dialect: postgres
-- expect: allow
SELECT DISTINCT ON (customer_id) customer_id, order_id, created_at
FROM orders
ORDER BY customer_id, created_at DESC NULLS LAST

-- case: pg_date_trunc_string_agg
-- dialect: postgres
-- expect: allow
SELECT date_trunc('month', created_at) AS month, string_agg(DISTINCT status, ', ' ORDER BY status),
       COUNT(*) FILTER (WHERE status = 'paid') AS paid,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS median
FROM orders
WHERE created_at >= now() - INTERVAL '1 year'
GROUP BY 1
ORDER BY 1

-- case: pg_json_operators
-- dialect: postgres
-- expect: allow
SELECT payload ->> 'user' AS usr, payload -> 'items' -> 0 AS first_item, payload @> '{"a": 1}'::jsonb
FROM events
WHERE payload ? 'user'

-- case: pg_generate_series
-- dialect: postgres
-- expect: allow
SELECT d::date FROM generate_series('2024-01-01'::date, '2024-12-31'::date, INTERVAL '1 day') AS d

-- case: pg_schema_qualified_generate_series
-- dialect: postgres
-- expect: allow
SELECT * FROM pg_catalog.generate_series(1, 3)

-- case: pg_lateral_unnest
-- dialect: postgres
-- expect: allow
SELECT o.id, tag
FROM orders AS o
CROSS JOIN LATERAL unnest(o.tags) AS tag
LEFT JOIN LATERAL (SELECT MAX(amount) AS m FROM payments p WHERE p.order_id = o.id) AS pm ON TRUE

-- case: pg_jsonb_array_elements
-- dialect: postgres
-- expect: allow
SELECT e ->> 'sku' FROM carts, jsonb_array_elements(carts.lines) AS e

-- case: pg_window_named
-- dialect: postgres
-- expect: allow
SELECT region, amount, SUM(amount) OVER w AS running, LAG(amount) OVER w AS prev
FROM sales
WINDOW w AS (PARTITION BY region ORDER BY sold_at)
FETCH FIRST 10 ROWS ONLY

-- case: pg_any_array_grouping_sets
-- dialect: postgres
-- expect: allow
SELECT region, product, SUM(qty)
FROM sales
WHERE region = ANY(ARRAY['north', 'south']) AND product IS DISTINCT FROM 'x'
GROUP BY GROUPING SETS ((region), (product), ())

-- case: pg_extract_coalesce_regex
-- dialect: postgres
-- expect: allow
SELECT EXTRACT(YEAR FROM created_at) AS y, COALESCE(city, 'unknown'), name ~* '^a', regexp_replace(name, '\s+', ' ', 'g')
FROM customers

-- case: pg_information_schema
-- dialect: postgres
-- expect: allow
SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'

-- case: pg_dollar_quoted_string
-- dialect: postgres
-- expect: allow
SELECT $$ it's; DROP TABLE x $$ AS s

-- case: pg_table_statement
-- dialect: postgres
-- expect: allow
TABLE orders

-- case: pg_read_file
-- dialect: postgres
-- expect: reject: `pg_read_file()` is not allowed: it reads or writes files
SELECT pg_read_file('/etc/passwd')

-- case: pg_read_file_schema_qualified
-- dialect: postgres
-- expect: reject: `pg_read_file()` is not allowed
SELECT pg_catalog.pg_read_file('/etc/passwd')

-- case: pg_read_file_quoted_name
-- dialect: postgres
-- expect: reject: `pg_read_file()` is not allowed
SELECT "pg_read_file"('/etc/passwd')

-- case: pg_read_binary_file_uppercase
-- dialect: postgres
-- expect: reject: `pg_read_binary_file()` is not allowed
SELECT PG_READ_BINARY_FILE('/etc/passwd')

-- case: pg_ls_dir_lateral
-- dialect: postgres
-- expect: reject: `pg_ls_dir()` is not allowed
SELECT f FROM orders, LATERAL pg_ls_dir('.') AS f

-- case: pg_stat_file
-- dialect: postgres
-- expect: reject: `pg_stat_file()` is not allowed
SELECT (pg_stat_file('postgresql.conf')).size

-- case: pg_lo_import
-- dialect: postgres
-- expect: reject: `lo_import()` is not allowed
SELECT lo_import('/etc/passwd')

-- case: pg_dblink
-- dialect: postgres
-- expect: reject: `dblink()` is not allowed: it reaches other databases
SELECT * FROM dblink('host=evil', 'SELECT 1') AS t(a INT)

-- case: pg_sleep_in_where
-- dialect: postgres
-- expect: reject: `pg_sleep()` is not allowed: it sleeps
SELECT id FROM orders WHERE pg_sleep(10) IS NULL

-- case: pg_advisory_lock
-- dialect: postgres
-- expect: reject: `pg_advisory_lock()` is not allowed
SELECT pg_advisory_lock(42)

-- case: pg_terminate_backend
-- dialect: postgres
-- expect: reject: `pg_terminate_backend()` is not allowed
SELECT pg_terminate_backend(pid) FROM pg_stat_activity

-- case: pg_set_config
-- dialect: postgres
-- expect: reject: `set_config()` is not allowed
SELECT set_config('statement_timeout', '0', false)

-- case: pg_current_setting
-- dialect: postgres
-- expect: reject: `current_setting()` is not allowed
SELECT current_setting('data_directory')

-- case: pg_nextval
-- dialect: postgres
-- expect: reject: `nextval()` is not allowed: it changes state
SELECT nextval('orders_id_seq')

-- case: pg_query_to_xml
-- dialect: postgres
-- expect: reject: `query_to_xml()` is not allowed: it runs SQL given as a string
SELECT query_to_xml('SELECT * FROM secrets', true, false, '')

-- case: pg_txid_current
-- dialect: postgres
-- expect: reject: `txid_current()` is not allowed
SELECT txid_current()

-- case: pg_delete_in_cte
-- dialect: postgres
-- expect: reject: `DELETE` is not allowed
WITH gone AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM gone

-- case: pg_update_in_nested_cte
-- dialect: postgres
-- expect: reject: `UPDATE` is not allowed
WITH a AS (SELECT 1), b AS (UPDATE orders SET status = 'x' RETURNING id) SELECT * FROM a, b

-- case: pg_insert_in_cte_union
-- dialect: postgres
-- expect: reject: `INSERT` is not allowed
WITH i AS (INSERT INTO log VALUES (1) RETURNING 1) SELECT 1 UNION SELECT * FROM i

-- case: pg_select_into
-- dialect: postgres
-- expect: reject: `SELECT ... INTO` is not allowed
SELECT * INTO stolen FROM orders

-- case: pg_for_update
-- dialect: postgres
-- expect: reject: locking clause `FOR UPDATE` is not allowed
SELECT * FROM orders WHERE id = 1 FOR UPDATE

-- case: pg_for_share
-- dialect: postgres
-- expect: reject: locking clause `FOR SHARE` is not allowed
SELECT * FROM orders FOR SHARE

-- case: pg_for_no_key_update_in_subquery
-- dialect: postgres
-- expect: reject: locking clause
SELECT * FROM (SELECT * FROM orders FOR NO KEY UPDATE) AS o

-- case: pg_copy_to_program
-- dialect: postgres
-- expect: reject: `COPY` is not allowed
COPY (SELECT 1) TO PROGRAM 'rm -rf /'

-- case: pg_set
-- dialect: postgres
-- expect: reject: `SET` is not allowed
SET search_path TO evil

-- case: pg_set_role
-- dialect: postgres
-- expect: reject: `SET` is not allowed
SET ROLE postgres

-- case: pg_reset
-- dialect: postgres
-- expect: reject: `RESET` is not allowed
RESET ALL

-- case: pg_truncate
-- dialect: postgres
-- expect: reject: `TRUNCATE` is not allowed
TRUNCATE orders

-- case: pg_grant
-- dialect: postgres
-- expect: reject: `GRANT` is not allowed
GRANT ALL ON orders TO PUBLIC

-- case: pg_merge
-- dialect: postgres
-- expect: reject: `MERGE` is not allowed
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE

-- case: pg_do_block
-- dialect: postgres
-- expect: reject: `DO` is not allowed
DO $$ BEGIN PERFORM pg_sleep(10); END $$

-- case: pg_call
-- dialect: postgres
-- expect: reject: `CALL` is not allowed
CALL refresh_everything()

-- case: pg_start_transaction
-- dialect: postgres
-- expect: reject: `START` is not allowed
START TRANSACTION

-- case: pg_start_transaction_read_write
-- dialect: postgres
-- expect: syntax: Syntax error at line 1, column 19 near `READ`
START TRANSACTION READ WRITE

-- case: pg_listen
-- dialect: postgres
-- expect: reject: `LISTEN` is not allowed
LISTEN channel

-- case: pg_comment_on
-- dialect: postgres
-- expect: reject: `COMMENT ON` is not allowed
COMMENT ON TABLE orders IS 'pwned'

-- case: pg_explain_analyze_delete
-- dialect: postgres
-- expect: reject: `EXPLAIN` is not allowed
EXPLAIN ANALYZE DELETE FROM orders

-- case: pg_show
-- dialect: postgres
-- expect: reject: `SHOW` is not allowed
SHOW data_directory

-- case: pg_values_root
-- dialect: postgres
-- expect: reject: `VALUES` is not allowed
VALUES (1), (2)

-- case: pg_nested_comment_hides_nothing
-- dialect: postgres
-- expect: allow
SELECT 1 /* /* */ , pg_sleep(10) --*/

-- case: pg_jsonb_to_recordset
-- dialect: postgres
-- expect: allow
SELECT r.a, r.b FROM orders AS o, jsonb_to_recordset(o.lines) AS r(a INT, b TEXT)

-- case: pg_stacked_in_comment_and_real
-- dialect: postgres
-- expect: reject: 2 statements were sent
SELECT 1 /* ; */ ; DELETE FROM orders

-- case: mysql_backticks
-- dialect: mysql
-- expect: allow
SELECT `o`.`id`, `c`.`name`, DATE_FORMAT(`o`.`created_at`, '%Y-%m') AS `month`
FROM `orders` AS `o` INNER JOIN `customers` AS `c` ON `c`.`id` = `o`.`customer_id`
WHERE `o`.`status` IN ('paid', 'shipped')
ORDER BY `month` DESC
LIMIT 10, 20

-- case: mysql_group_concat_if
-- dialect: mysql
-- expect: allow
SELECT customer_id, GROUP_CONCAT(DISTINCT product ORDER BY product SEPARATOR ', '),
       SUM(IF(status = 'paid', amount, 0)) AS paid, IFNULL(MAX(note), '') AS note
FROM orders
GROUP BY customer_id WITH ROLLUP

-- case: mysql_dates_and_strings
-- dialect: mysql
-- expect: allow
SELECT DATEDIFF(NOW(), created_at), TIMESTAMPDIFF(MONTH, created_at, NOW()), CONCAT_WS('-', a, b),
       STR_TO_DATE('2024-01-01', '%Y-%m-%d'), CONVERT(name USING utf8mb4), LOCATE('x', name)
FROM orders
WHERE created_at >= DATE_SUB(CURDATE(), INTERVAL 30 DAY)

-- case: mysql_window_cte
-- dialect: mysql
-- expect: allow
WITH ranked AS (
  SELECT id, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY created_at DESC) AS rn FROM orders
)
SELECT id FROM ranked WHERE rn = 1

-- case: mysql_json_table
-- dialect: mysql
-- expect: allow
SELECT j.x FROM JSON_TABLE('[1, 2]', '$[*]' COLUMNS (x INT PATH '$')) AS j

-- case: mysql_hash_comment
-- dialect: mysql
-- expect: allow
SELECT id FROM orders # ; DELETE FROM orders

-- case: mysql_read_user_variable
-- dialect: mysql
-- expect: allow
SELECT @@version, @some_var

-- case: mysql_optimizer_hint
-- dialect: mysql
-- expect: reject: optimizer hint
SELECT /*+ SET_VAR(sql_mode = '') */ id FROM orders

-- case: mysql_sleep
-- dialect: mysql
-- expect: reject: `sleep()` is not allowed: it sleeps
SELECT SLEEP(5)

-- case: mysql_sleep_in_subquery
-- dialect: mysql
-- expect: reject: `sleep()` is not allowed
SELECT id FROM orders WHERE id = (SELECT 1 FROM dual WHERE SLEEP(5) = 0)

-- case: mysql_benchmark
-- dialect: mysql
-- expect: reject: `benchmark()` is not allowed
SELECT BENCHMARK(10000000, MD5('x'))

-- case: mysql_load_file
-- dialect: mysql
-- expect: reject: `load_file()` is not allowed: it reads or writes files
SELECT LOAD_FILE('/etc/passwd')

-- case: mysql_get_lock
-- dialect: mysql
-- expect: reject: `get_lock()` is not allowed
SELECT GET_LOCK('a', 10)

-- case: mysql_release_lock
-- dialect: mysql
-- expect: reject: `release_lock()` is not allowed
SELECT RELEASE_LOCK('a')

-- case: mysql_sys_exec
-- dialect: mysql
-- expect: reject: `sys_exec()` is not allowed
SELECT sys_exec('id')

-- case: mysql_dash_dash_without_space_is_not_a_comment
-- dialect: mysql
-- expect: reject: `sleep()` is not allowed
SELECT 1 --SLEEP(5)

-- case: mysql_executable_comment
-- dialect: mysql
-- expect: reject: Executable comments
SELECT /*! SLEEP(5) */ 1

-- case: mysql_executable_comment_versioned
-- dialect: mysql
-- expect: reject: Executable comments
SELECT 1 /*!50000 , LOAD_FILE('/etc/passwd') */

-- case: mariadb_executable_comment
-- dialect: mysql
-- expect: reject: Executable comments
SELECT 1 /*M! , SLEEP(5) */

-- case: mysql_into_variable
-- dialect: mysql
-- expect: reject: `SELECT ... INTO` is not allowed
SELECT id INTO @x FROM orders LIMIT 1

-- case: mysql_into_outfile
-- dialect: mysql
-- expect: syntax: Syntax error at line 1, column 22 near `INTO`
SELECT * FROM orders INTO OUTFILE '/tmp/x'

-- case: mysql_variable_assignment
-- dialect: mysql
-- expect: reject: Assigning a variable
SELECT @x := MAX(id) FROM orders

-- case: mysql_lock_in_share_mode
-- dialect: mysql
-- expect: reject: locking clause
SELECT * FROM orders LOCK IN SHARE MODE

-- case: mysql_for_update
-- dialect: mysql
-- expect: reject: locking clause `FOR UPDATE`
SELECT * FROM orders FOR UPDATE

-- case: mysql_replace
-- dialect: mysql
-- expect: reject: `REPLACE` is not allowed
REPLACE INTO orders VALUES (1)

-- case: mysql_load_data
-- dialect: mysql
-- expect: syntax: Syntax error
LOAD DATA INFILE '/etc/passwd' INTO TABLE t

-- case: mysql_set_global
-- dialect: mysql
-- expect: reject: `SET` is not allowed
SET GLOBAL max_connections = 1

-- case: mysql_use
-- dialect: mysql
-- expect: reject: `USE` is not allowed
USE mysql

-- case: mysql_show_tables
-- dialect: mysql
-- expect: reject: `SHOW` is not allowed
SHOW TABLES

-- case: mysql_describe
-- dialect: mysql
-- expect: reject: `DESCRIBE` is not allowed
DESCRIBE orders

-- case: mysql_kill
-- dialect: mysql
-- expect: reject: `KILL` is not allowed
KILL 1

-- case: mysql_lock_tables
-- dialect: mysql
-- expect: reject: `LOCK TABLES` is not allowed
LOCK TABLES orders WRITE

-- case: mysql_flush
-- dialect: mysql
-- expect: reject: `FLUSH` is not allowed
FLUSH PRIVILEGES

-- case: mysql_optimize
-- dialect: mysql
-- expect: reject: `OPTIMIZE` is not allowed
OPTIMIZE TABLE orders

-- case: mysql_call
-- dialect: mysql
-- expect: reject: `CALL` is not allowed
CALL p()

-- case: mysql_rename
-- dialect: mysql
-- expect: reject: `RENAME` is not allowed
RENAME TABLE orders TO old_orders

-- case: duckdb_qualify
-- dialect: duckdb
-- expect: allow
SELECT customer_id, order_id, amount
FROM orders
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY amount DESC) = 1

-- case: duckdb_from_first
-- dialect: duckdb
-- expect: allow
FROM orders SELECT customer_id, count(*) GROUP BY ALL ORDER BY ALL

-- case: duckdb_star_exclude_lists
-- dialect: duckdb
-- expect: allow
SELECT * EXCLUDE (payload), list_transform([1, 2, 3], x -> x * 2) AS doubled, [1, 2, 3][2] AS second,
       regexp_matches(name, '^a'), strftime(created_at, '%Y'), epoch_ms(1700000000000)
FROM orders
USING SAMPLE 10

-- case: duckdb_range_and_unnest
-- dialect: duckdb
-- expect: allow
SELECT r.range, u.x FROM range(5) AS r, unnest([1, 2]) AS u(x)

-- case: duckdb_generate_series_struct
-- dialect: duckdb
-- expect: allow
SELECT g.generate_series, {'a': 1, 'b': 'x'} AS s, struct_pack(k := 1) FROM generate_series(1, 3) AS g

-- case: duckdb_pivot_subquery
-- dialect: duckdb
-- expect: allow
SELECT * FROM (PIVOT sales ON year USING sum(amount))

-- case: duckdb_date_trunc_interval
-- dialect: duckdb
-- expect: allow
SELECT date_trunc('week', ts) AS w, count(*) FROM events WHERE ts > now() - INTERVAL 7 DAY GROUP BY 1

-- case: duckdb_positional_column
-- dialect: duckdb
-- expect: allow
SELECT #1, #2 FROM orders ORDER BY #1

-- case: duckdb_string_literal_file
-- dialect: duckdb
-- expect: reject: `file.csv` is not allowed as a table
SELECT * FROM 'file.csv'

-- case: duckdb_quoted_file
-- dialect: duckdb
-- expect: reject: `/tmp/x.parquet` is not allowed as a table
SELECT * FROM "/tmp/x.parquet"

-- case: duckdb_unquoted_file_name
-- dialect: duckdb
-- expect: reject: `x.csv` is not allowed as a table
SELECT * FROM x.csv

-- case: duckdb_url_in_join
-- dialect: duckdb
-- expect: reject: is not allowed as a table
SELECT * FROM orders JOIN 'https://example.com/x.parquet' AS r USING (id)

-- case: duckdb_file_in_subquery
-- dialect: duckdb
-- expect: reject: `s3://bucket/k.json` is not allowed as a table
SELECT * FROM (SELECT * FROM 's3://bucket/k.json')

-- case: duckdb_read_csv
-- dialect: duckdb
-- expect: reject: `read_csv()` is not allowed: it reads or writes files
SELECT * FROM read_csv('x.csv')

-- case: duckdb_read_csv_auto
-- dialect: duckdb
-- expect: reject: `read_csv_auto()` is not allowed
SELECT * FROM read_csv_auto('x.csv')

-- case: duckdb_read_parquet
-- dialect: duckdb
-- expect: reject: `read_parquet()` is not allowed
SELECT * FROM read_parquet('x.parquet')

-- case: duckdb_read_json
-- dialect: duckdb
-- expect: reject: `read_json_auto()` is not allowed
SELECT * FROM read_json_auto('x.json')

-- case: duckdb_read_ndjson
-- dialect: duckdb
-- expect: reject: `read_ndjson()` is not allowed
SELECT * FROM read_ndjson('x.json')

-- case: duckdb_read_text_in_scalar_subquery
-- dialect: duckdb
-- expect: reject: `read_text()` is not allowed
SELECT (SELECT content FROM read_text('/etc/passwd')) AS c

-- case: duckdb_read_blob_schema_qualified
-- dialect: duckdb
-- expect: reject: `read_blob()` is not allowed
SELECT * FROM main.read_blob('/etc/passwd')

-- case: duckdb_glob
-- dialect: duckdb
-- expect: reject: `glob()` is not allowed
SELECT * FROM glob('/home/*')

-- case: duckdb_sqlite_scan
-- dialect: duckdb
-- expect: reject: `sqlite_scan()` is not allowed
SELECT * FROM sqlite_scan('/tmp/other.db', 'users')

-- case: duckdb_postgres_scan
-- dialect: duckdb
-- expect: reject: `postgres_scan()` is not allowed
SELECT * FROM postgres_scan('host=evil', 'public', 'users')

-- case: duckdb_mysql_scan
-- dialect: duckdb
-- expect: reject: `mysql_scan()` is not allowed
SELECT * FROM mysql_scan('host=evil')

-- case: duckdb_query_table_function
-- dialect: duckdb
-- expect: reject: `query()` is not allowed: it runs SQL given as a string
SELECT * FROM query('SELECT * FROM secrets')

-- case: duckdb_query_table
-- dialect: duckdb
-- expect: reject: `query_table()` is not allowed
SELECT * FROM query_table('secrets')

-- case: duckdb_getenv
-- dialect: duckdb
-- expect: reject: `getenv()` is not allowed
SELECT getenv('HOME')

-- case: duckdb_unknown_table_function
-- dialect: duckdb
-- expect: reject: table function `duckdb_settings()` is not allowed in FROM
SELECT * FROM duckdb_settings()

-- case: duckdb_install
-- dialect: duckdb
-- expect: reject: `INSTALL` is not allowed
INSTALL httpfs

-- case: duckdb_force_install
-- dialect: duckdb
-- expect: reject: `INSTALL` is not allowed
FORCE INSTALL httpfs

-- case: duckdb_load
-- dialect: duckdb
-- expect: reject: `LOAD` is not allowed
LOAD httpfs

-- case: duckdb_attach
-- dialect: duckdb
-- expect: reject: `ATTACH` is not allowed
ATTACH '/tmp/other.db' AS other

-- case: duckdb_copy_to
-- dialect: duckdb
-- expect: reject: `COPY` is not allowed
COPY orders TO '/tmp/orders.csv'

-- case: duckdb_export_database
-- dialect: duckdb
-- expect: syntax: Syntax error
EXPORT DATABASE '/tmp/dump'

-- case: duckdb_set
-- dialect: duckdb
-- expect: reject: `SET` is not allowed
SET enable_external_access = true

-- case: duckdb_pragma
-- dialect: duckdb
-- expect: reject: `PRAGMA` is not allowed
PRAGMA database_list

-- case: duckdb_summarize
-- dialect: duckdb
-- expect: reject: `SUMMARIZE` is not allowed
SUMMARIZE orders

-- case: duckdb_pivot_statement
-- dialect: duckdb
-- expect: reject: `PIVOT` is not allowed
PIVOT sales ON year USING sum(amount)

-- case: duckdb_create_secret
-- dialect: duckdb
-- expect: syntax: Syntax error
CREATE SECRET (TYPE s3)

-- case: duckdb_call
-- dialect: duckdb
-- expect: reject: `CALL` is not allowed
CALL pragma_version()

-- case: duckdb_nextval
-- dialect: duckdb
-- expect: reject: `nextval()` is not allowed
SELECT nextval('seq')

-- case: sqlite_analyze
-- dialect: sqlite
-- expect: reject: `ANALYZE` is not allowed
ANALYZE

-- case: sqlite_date_functions
-- dialect: sqlite
-- expect: allow
SELECT date('now', '-1 day'), datetime(ts, 'unixepoch'), typeof(a), hex(b), quote(c), a ->> '$.x'
FROM t
WHERE a IS NOT b AND c ISNULL
ORDER BY a COLLATE NOCASE

-- case: sqlite_filter_and_named_window
-- dialect: sqlite
-- expect: allow
SELECT sum(a) FILTER (WHERE b > 0), ntile(4) OVER w, lead(a, 1, 0) OVER w FROM t WINDOW w AS (ORDER BY c)

-- case: sqlite_quoted_table_with_space
-- dialect: sqlite
-- expect: allow
SELECT T1.id FROM "Player Attributes" AS T1 WHERE T1."overall_rating" > 80

-- case: sqlite_sqlite_dbpage
-- dialect: sqlite
-- expect: reject: table function `sqlite_dbpage()` is not allowed in FROM
SELECT * FROM sqlite_dbpage('main')

-- case: pg_revoke
-- dialect: postgres
-- expect: reject: `REVOKE` is not allowed
REVOKE SELECT ON orders FROM reader

-- case: pg_create_index
-- dialect: postgres
-- expect: reject: `CREATE` is not allowed
CREATE INDEX i ON orders (created_at)

-- case: pg_try_advisory_lock
-- dialect: postgres
-- expect: reject: `pg_try_advisory_lock()` is not allowed
SELECT pg_try_advisory_lock(1)

-- case: pg_rows_from_ls_dir
-- dialect: postgres
-- expect: reject: `pg_ls_dir()` is not allowed
SELECT * FROM ROWS FROM (pg_ls_dir('.'))

-- case: pg_table_to_xml
-- dialect: postgres
-- expect: reject: `table_to_xml()` is not allowed
SELECT table_to_xml('secrets', true, false, '')

-- case: pg_union_for_update
-- dialect: postgres
-- expect: reject: locking clause `FOR UPDATE`
SELECT 1 UNION SELECT 2 FOR UPDATE

-- case: mysql_match_against_regexp
-- dialect: mysql
-- expect: allow
SELECT id, CAST(price AS DECIMAL(10, 2)), qty DIV 2, qty MOD 3, JSON_EXTRACT(meta, '$.a'), meta->>'$.b'
FROM products
WHERE MATCH(title) AGAINST ('lamp' IN BOOLEAN MODE) AND title REGEXP '^[A-Z]'

-- case: mysql_index_hint_and_modifiers
-- dialect: mysql
-- expect: allow
SELECT SQL_NO_CACHE STRAIGHT_JOIN o.id FROM orders AS o USE INDEX (idx_created) JOIN customers AS c ON c.id = o.customer_id

-- case: mysql_from_dual
-- dialect: mysql
-- expect: allow
SELECT 1 + 1 FROM dual

-- case: mysql_union_exists
-- dialect: mysql
-- expect: allow
SELECT name FROM customers WHERE EXISTS (SELECT 1 FROM orders WHERE orders.customer_id = customers.id)
UNION ALL
SELECT name FROM suppliers

-- case: mysql_union_load_file
-- dialect: mysql
-- expect: reject: `load_file()` is not allowed
SELECT name FROM customers UNION SELECT LOAD_FILE('/etc/passwd')

-- case: mysql_odbc_escape_sleep
-- dialect: mysql
-- expect: reject: `sleep()` is not allowed
SELECT {fn sleep(5)}

-- case: mysql_backticked_function_name
-- dialect: mysql
-- expect: reject: `sleep()` is not allowed
SELECT `sleep`(5)

-- case: mysql_last_insert_id
-- dialect: mysql
-- expect: reject: `last_insert_id()` is not allowed
SELECT LAST_INSERT_ID(42)

-- case: duckdb_asof_join
-- dialect: duckdb
-- expect: allow
SELECT t.k, t.ts, u.price FROM trades AS t ASOF JOIN prices AS u ON t.k = u.k AND t.ts >= u.ts

-- case: duckdb_replace_columns_comprehension
-- dialect: duckdb
-- expect: allow
SELECT * REPLACE (amount * 100 AS amount), COLUMNS('price_.*'), [x * 2 FOR x IN [1, 2]] FROM orders

-- case: duckdb_casts_and_lists
-- dialect: duckdb
-- expect: allow
SELECT a::VARCHAR, TRY_CAST(b AS INT), c::DATE, list(d), string_split(e, ','), len(e) FROM t GROUP BY ALL

-- case: duckdb_unpivot_subquery
-- dialect: duckdb
-- expect: allow
SELECT * FROM (UNPIVOT monthly ON jan, feb, mar INTO NAME month VALUE amount)

-- case: duckdb_qualified_tables
-- dialect: duckdb
-- expect: allow
SELECT * FROM memory.main.orders AS o JOIN main.customers AS c ON c.id = o.customer_id

-- case: duckdb_information_schema
-- dialect: duckdb
-- expect: allow
SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'

-- case: duckdb_glob_file_pattern
-- dialect: duckdb
-- expect: reject: `data/*.parquet` is not allowed as a table
SELECT * FROM 'data/*.parquet'

-- case: duckdb_quoted_suffix_split
-- dialect: duckdb
-- expect: reject: `x.csv` is not allowed as a table
SELECT * FROM x."csv"

-- case: duckdb_read_text_in_lambda
-- dialect: duckdb
-- expect: reject: `read_text()` is not allowed
SELECT list_transform(['a'], x -> read_text(x))

-- case: duckdb_parquet_metadata
-- dialect: duckdb
-- expect: reject: `parquet_metadata()` is not allowed
SELECT * FROM parquet_metadata('x.parquet')

-- case: duckdb_describe
-- dialect: duckdb
-- expect: reject: `DESCRIBE` is not allowed
DESCRIBE SELECT 1

-- case: duckdb_detach
-- dialect: duckdb
-- expect: reject: `DETACH` is not allowed
DETACH other

-- case: duckdb_use
-- dialect: duckdb
-- expect: reject: `USE` is not allowed
USE other

-- case: duckdb_show_tables
-- dialect: duckdb
-- expect: reject: `SHOW` is not allowed
SHOW TABLES

-- case: duckdb_current_setting
-- dialect: duckdb
-- expect: reject: `current_setting()` is not allowed
SELECT current_setting('home_directory')

-- case: pg_ts_rewrite_runs_sql_text
-- dialect: postgres
-- expect: reject: `ts_rewrite()` is not allowed: it runs SQL given as a string
SELECT ts_rewrite('a'::tsquery, 'SELECT pg_sleep(10)::text::tsquery, ''b''::tsquery')

-- case: pg_schema_qualified_sleep
-- dialect: postgres
-- expect: reject: `pg_sleep()` is not allowed: it sleeps or takes locks
SELECT pg_catalog.pg_sleep(1)

-- case: pg_quoted_sleep
-- dialect: postgres
-- expect: reject: `pg_sleep()` is not allowed
SELECT "pg_sleep"(1)

-- case: pg_qualified_allowed_name
-- dialect: postgres
-- expect: reject: a function is called by its plain name here
SELECT public.age(now())

-- case: pg_attribute_notation_call
-- dialect: postgres
-- expect: reject: a field of an expression in parentheses can call a function
SELECT ('data_directory'::text).current_setting

-- case: pg_operator_by_schema
-- dialect: postgres
-- expect: reject: OPERATOR(...) names an operator by its schema
SELECT 1 OPERATOR(pg_catalog.+) 1

-- case: pg_sleep_in_aggregate_filter
-- dialect: postgres
-- expect: reject: `pg_sleep()` is not allowed
SELECT count(*) FILTER (WHERE pg_sleep(1) IS NULL) FROM t

-- case: pg_unknown_function
-- dialect: postgres
-- expect: reject: `inet_server_port()` is not allowed: it is not on this engine's list of allowed functions
SELECT inet_server_port()

-- case: pg_listed_functions
-- dialect: postgres
-- expect: allow
SELECT age(now()), jsonb_build_object('a', 1), to_json(t.a), lower(t.b) FROM t

-- case: duckdb_sleep_ms
-- dialect: duckdb
-- expect: reject: `sleep_ms()` is not allowed: it sleeps or takes locks
SELECT sleep_ms(1000)

-- case: duckdb_pg_sleep
-- dialect: duckdb
-- expect: reject: `pg_sleep()` is not allowed: it sleeps or takes locks
SELECT pg_sleep(1)

-- case: duckdb_aggregate_by_name
-- dialect: duckdb
-- expect: reject: `list_aggregate()` is not allowed: it calls a function named by a string
SELECT list_aggregate([1, 2], 'sum')

-- case: duckdb_listed_functions
-- dialect: duckdb
-- expect: allow
SELECT list_sort([3, 1]), date_part('year', DATE '2024-01-01'), json_valid('{}')

-- case: mysql_master_gtid_wait
-- dialect: mysql
-- expect: reject: `master_gtid_wait()` is not allowed: it sleeps or takes locks
SELECT MASTER_GTID_WAIT('0-1-1', 10)

-- case: mysql_listed_functions
-- dialect: mysql
-- expect: allow
SELECT json_unquote(json_extract(doc, '$.a')), find_in_set('a', tags), adddate(d, 1) FROM t

-- case: sqlite_unknown_function
-- dialect: sqlite
-- expect: reject: `sqlite_compileoption_get()` is not allowed: it is not on this engine's list of allowed functions
SELECT sqlite_compileoption_get(0)

-- case: sqlite_nested_too_deep
-- dialect: sqlite
-- expect: reject: at most 100 are allowed (setting `sql_max_depth`
SELECT ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))

-- case: spark_text_file_table
-- dialect: spark
-- expect: reject: Spark reads ``text.`path` `` as the file at that path
SELECT * FROM text.`/etc/passwd`

-- case: spark_parquet_relative_path
-- dialect: spark
-- expect: reject: Spark reads ``parquet.`path` `` as the file at that path
SELECT * FROM parquet.`data/part-0.parquet`

-- case: spark_csv_format_any_case
-- dialect: spark
-- expect: reject: Spark reads ``CSV.`path` `` as the file at that path
SELECT * FROM CSV.`/srv/data/people.csv` AS p

-- case: spark_json_url
-- dialect: spark
-- expect: reject: Spark reads ``json.`path` `` as the file at that path
SELECT * FROM json.`s3a://bucket/key.json`

-- case: spark_orc_in_a_join
-- dialect: spark
-- expect: reject: Spark reads ``orc.`path` `` as the file at that path
SELECT t.a FROM t JOIN orc.`/warehouse/t2` AS o ON t.a = o.a

-- case: spark_delta_path_time_travel_refused
-- dialect: spark
-- expect: reject: Spark reads ``delta.`path` `` as the file at that path
SELECT * FROM delta.`/mnt/lake/events`

-- case: spark_binaryfile_folder
-- dialect: spark
-- expect: reject: Spark reads ``binaryFile.`path` `` as the file at that path
SELECT path, content FROM binaryFile.`/etc`

-- case: spark_format_by_class_name
-- dialect: spark
-- expect: reject: Spark reads ``org.apache.spark.sql.parquet.`path` `` as the file
SELECT * FROM `org.apache.spark.sql.parquet`.`/tmp/x`

-- case: spark_format_unquoted_name
-- dialect: spark
-- expect: reject: Spark reads ``parquet.`path` `` as the file at that path
SELECT * FROM parquet.sales

-- case: spark_file_table_in_a_subquery
-- dialect: spark
-- expect: reject: Spark reads ``text.`path` `` as the file at that path
SELECT * FROM t WHERE a IN (SELECT value FROM text.`/proc/self/environ`)

-- case: spark_path_under_a_catalog
-- dialect: spark
-- expect: reject: Spark reads ``avro.`path` `` as the file at that path
SELECT * FROM spark_catalog.avro.`/tmp/x.avro`

-- case: spark_path_as_a_table_name
-- dialect: spark
-- expect: reject: it names a file or URL, which Spark reads as a file
SELECT * FROM sales.`/tmp/x`

-- case: databricks_volume_path
-- dialect: databricks
-- expect: reject: Spark reads ``json.`path` `` as the file at that path
SELECT * FROM json.`/Volumes/main/default/raw/events.json`

-- case: hive_text_file_table
-- dialect: hive
-- expect: reject: Spark reads ``text.`path` `` as the file at that path
SELECT * FROM text.`/etc/passwd`

-- case: spark_reflect
-- dialect: spark
-- expect: reject: `reflect()` is not allowed: it calls a Java method of the server's JVM by name
SELECT reflect('java.lang.Runtime', 'getRuntime')

-- case: spark_reflect_upper_case
-- dialect: spark
-- expect: reject: `reflect()` is not allowed: it calls a Java method
SELECT REFLECT('java.lang.Thread', 'sleep', 10000L)

-- case: spark_reflect_backquoted
-- dialect: spark
-- expect: reject: `reflect()` is not allowed: it calls a Java method
SELECT `reflect`('java.util.UUID', 'randomUUID')

-- case: spark_reflect_qualified
-- dialect: spark
-- expect: reject: `reflect()` is not allowed: it calls a Java method
SELECT system.builtin.reflect('java.util.UUID', 'randomUUID')

-- case: spark_java_method
-- dialect: spark
-- expect: reject: `java_method()` is not allowed: it calls a Java method
SELECT java_method('java.lang.System', 'getProperty', 'user.home')

-- case: spark_java_method_in_where
-- dialect: spark
-- expect: reject: `java_method()` is not allowed: it calls a Java method
SELECT a FROM t WHERE java_method('java.lang.System', 'getenv', 'HOME') IS NOT NULL

-- case: databricks_try_reflect
-- dialect: databricks
-- expect: reject: `try_reflect()` is not allowed: it calls a Java method
SELECT try_reflect('java.lang.Runtime', 'getRuntime')

-- case: hive_reflect2
-- dialect: hive
-- expect: reject: `reflect2()` is not allowed: it calls a Java method
SELECT reflect2(name, 'length') FROM t

-- case: spark_reflect_in_lateral_view
-- dialect: spark
-- expect: reject: `reflect()` is not allowed: it calls a Java method
SELECT * FROM t LATERAL VIEW explode(array(reflect('java.util.UUID', 'randomUUID'))) e AS x

-- case: spark_variable_substitution_env
-- dialect: spark
-- expect: reject: `${...}` is not allowed on spark: the engine replaces it in the SQL text
SELECT '${env:AWS_SECRET_ACCESS_KEY}' AS k

-- case: spark_variable_substitution_in_a_comment
-- dialect: spark
-- expect: reject: `${...}` is not allowed on spark
SELECT a FROM t -- ${spark.hadoop.fs.s3a.secret.key}

-- case: databricks_variable_substitution
-- dialect: databricks
-- expect: reject: `${...}` is not allowed on databricks
SELECT * FROM t WHERE a = '${system:user.home}'

-- case: spark_dollar_sign_allowed
-- dialect: spark
-- expect: allow
SELECT concat('$', price) AS shown, '{x}' AS braces FROM t

-- case: spark_insert
-- dialect: spark
-- expect: reject: `INSERT` is not allowed
INSERT INTO t SELECT * FROM s

-- case: spark_insert_overwrite_directory
-- dialect: spark
-- expect: reject: `INSERT` is not allowed
INSERT OVERWRITE DIRECTORY '/tmp/out' SELECT * FROM t

-- case: spark_create_table_as
-- dialect: spark
-- expect: reject: `CREATE` is not allowed
CREATE TABLE t2 USING parquet LOCATION '/tmp/t2' AS SELECT * FROM t

-- case: spark_create_temporary_function
-- dialect: spark
-- expect: reject: `CREATE` is not allowed
CREATE TEMPORARY FUNCTION f AS 'com.example.Evil' USING JAR '/tmp/evil.jar'

-- case: spark_create_sql_function
-- dialect: spark
-- expect: reject: `CREATE` is not allowed
CREATE FUNCTION f(x INT) RETURNS INT RETURN x + 1

-- case: spark_cache_table
-- dialect: spark
-- expect: reject: `CACHE` is not allowed
CACHE TABLE t

-- case: spark_cache_lazy_as_select
-- dialect: spark
-- expect: reject: `CACHE` is not allowed
CACHE LAZY TABLE c AS SELECT * FROM t

-- case: spark_uncache
-- dialect: spark
-- expect: reject: `UNCACHE` is not allowed
UNCACHE TABLE t

-- case: spark_clear_cache
-- dialect: spark
-- expect: reject: `CLEAR` is not allowed
CLEAR CACHE

-- case: spark_add_jar
-- dialect: spark
-- expect: reject: `ADD JAR` is not allowed
ADD JAR /tmp/evil.jar

-- case: spark_add_file
-- dialect: spark
-- expect: reject: `ADD FILE` is not allowed
ADD FILE /tmp/script.py

-- case: spark_list_jars
-- dialect: spark
-- expect: reject: `LIST` is not allowed
LIST JARS

-- case: spark_set_conf
-- dialect: spark
-- expect: reject: `SET` is not allowed
SET spark.sql.runSQLOnFiles=true

-- case: spark_set_all
-- dialect: spark
-- expect: reject: `SET` is not allowed
SET

-- case: spark_set_var
-- dialect: spark
-- expect: reject: `SET` is not allowed
SET VAR v = 1

-- case: spark_reset
-- dialect: spark
-- expect: reject: `RESET` is not allowed
RESET

-- case: spark_reset_key
-- dialect: spark
-- expect: syntax: Syntax error at line 1, column 12
RESET spark.x

-- case: spark_refresh_table
-- dialect: spark
-- expect: reject: `REFRESH` is not allowed
REFRESH TABLE t

-- case: spark_refresh_path
-- dialect: spark
-- expect: reject: `REFRESH` is not allowed
REFRESH '/tmp/data'

-- case: spark_msck_repair
-- dialect: spark
-- expect: reject: `MSCK REPAIR` is not allowed
MSCK REPAIR TABLE t

-- case: spark_analyze
-- dialect: spark
-- expect: reject: `ANALYZE` is not allowed
ANALYZE TABLE t COMPUTE STATISTICS

-- case: spark_load_data
-- dialect: spark
-- expect: reject: `LOAD DATA` is not allowed
LOAD DATA LOCAL INPATH '/etc/passwd' INTO TABLE t

-- case: spark_declare_variable
-- dialect: spark
-- expect: reject: `DECLARE` is not allowed
DECLARE VARIABLE v INT

-- case: spark_execute_immediate
-- dialect: spark
-- expect: reject: `EXECUTE` is not allowed
EXECUTE IMMEDIATE 'DROP TABLE t'

-- case: spark_use
-- dialect: spark
-- expect: reject: `USE` is not allowed
USE other_db

-- case: spark_drop
-- dialect: spark
-- expect: reject: `DROP` is not allowed
DROP TABLE t

-- case: spark_truncate
-- dialect: spark
-- expect: reject: `TRUNCATE` is not allowed
TRUNCATE TABLE t

-- case: spark_alter
-- dialect: spark
-- expect: reject: `ALTER` is not allowed
ALTER TABLE t ADD COLUMNS (x INT)

-- case: databricks_optimize
-- dialect: databricks
-- expect: reject: `OPTIMIZE` is not allowed
OPTIMIZE t

-- case: databricks_vacuum
-- dialect: databricks
-- expect: reject: `VACUUM` is not allowed
VACUUM t

-- case: databricks_copy_into
-- dialect: databricks
-- expect: reject: `COPY` is not allowed
COPY INTO t FROM '/Volumes/main/raw/x'

-- case: databricks_merge
-- dialect: databricks
-- expect: reject: `MERGE` is not allowed
MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE

-- case: spark_script_transform
-- dialect: spark
-- expect: reject: `QueryTransform` is not allowed
SELECT TRANSFORM(a, b) USING '/bin/sh -c id' AS (x, y) FROM t

-- case: spark_optimizer_hint
-- dialect: spark
-- expect: reject: `optimizer hint /*+ ... */` is not allowed
SELECT /*+ BROADCAST(t) */ * FROM t

-- case: spark_two_statements
-- dialect: spark
-- expect: reject: 2 statements were sent
SELECT 1; SET spark.sql.runSQLOnFiles=true

-- case: databricks_read_files
-- dialect: databricks
-- expect: reject: `read_files()` is not allowed: it reads or writes files on the database server
SELECT * FROM read_files('/Volumes/main/raw/x', format => 'csv')

-- case: databricks_read_kafka
-- dialect: databricks
-- expect: reject: `read_kafka()` is not allowed: it reads or writes files
SELECT * FROM read_kafka(bootstrapServers => 'kafka:9092', subscribe => 'events')

-- case: databricks_http_request
-- dialect: databricks
-- expect: reject: `http_request()` is not allowed: it reaches other databases or the network
SELECT http_request(conn => 'c', method => 'GET', path => '/')

-- case: databricks_ai_query
-- dialect: databricks
-- expect: reject: `ai_query()` is not allowed: it reaches other databases or the network
SELECT ai_query('endpoint', concat('Summarize: ', body)) FROM t

-- case: databricks_ai_function
-- dialect: databricks
-- expect: reject: `ai_summarize()` is not allowed: it reaches other databases or the network
SELECT ai_summarize(body) FROM t

-- case: databricks_secret
-- dialect: databricks
-- expect: reject: `secret()` is not allowed
SELECT secret('scope', 'key')

-- case: databricks_list_secrets
-- dialect: databricks
-- expect: reject: `list_secrets()` is not allowed
SELECT * FROM list_secrets()

-- case: databricks_identifier_table
-- dialect: databricks
-- expect: reject: `identifier()` is not allowed: it reads a table named by a string
SELECT * FROM IDENTIFIER('db.' || 'salaries')

-- case: databricks_identifier_column
-- dialect: databricks
-- expect: reject: `identifier()` is not allowed: it reads a table named by a string
SELECT IDENTIFIER('salary') FROM t

-- case: hive_in_file
-- dialect: hive
-- expect: reject: `in_file()` is not allowed: it reads or writes files
SELECT in_file('root', '/etc/passwd')

-- case: spark_unlisted_function
-- dialect: spark
-- expect: reject: `my_udf()` is not allowed: it is not on this engine's list of allowed functions
SELECT my_udf(a) FROM t

-- case: spark_ordinary_query
-- dialect: spark
-- expect: allow
SELECT d.name, COUNT(*) AS n, AVG(e.salary) AS avg_salary, date_format(MAX(e.hired), 'yyyy-MM') AS last_hire
FROM db.employees AS e JOIN db.departments AS d ON e.dept = d.id
WHERE e.hired >= DATE '2020-01-01' AND e.name RLIKE '^[A-Z]'
GROUP BY d.name
HAVING COUNT(*) > 1
ORDER BY n DESC
LIMIT 10

-- case: spark_three_part_name
-- dialect: spark
-- expect: allow
SELECT * FROM spark_catalog.default.employees

-- case: spark_lateral_view_explode
-- dialect: spark
-- expect: allow
SELECT t.id, tag FROM t LATERAL VIEW explode(t.tags) e AS tag

-- case: spark_struct_field_of_an_element
-- dialect: spark
-- expect: allow
SELECT t.items[0].price, (named_struct('a', 1)).a FROM t

-- case: spark_range_and_stack
-- dialect: spark
-- expect: allow
SELECT * FROM range(10) JOIN stack(2, 1, 'a', 2, 'b') AS s(n, c) ON id = n

-- case: spark_values_in_from
-- dialect: spark
-- expect: allow
SELECT * FROM VALUES (1, 'a'), (2, 'b') AS v(n, c)

-- case: spark_window_and_cte
-- dialect: spark
-- expect: allow
WITH ranked AS (
  SELECT id, dept, row_number() OVER (PARTITION BY dept ORDER BY salary DESC) AS r FROM db.employees
)
SELECT * FROM ranked WHERE r <= 3

-- case: databricks_unity_catalog_name
-- dialect: databricks
-- expect: allow
SELECT * FROM main.sales.orders WHERE amount > 100

-- case: hive_plain_query
-- dialect: hive
-- expect: allow
SELECT a, COUNT(*) FROM db.t GROUP BY a

-- case: bigquery_wildcard_table
-- dialect: bigquery
-- expect: allow
SELECT COUNT(*) FROM `bigquery-public-data.google_analytics_sample.ga_sessions_2017*`
WHERE _TABLE_SUFFIX BETWEEN '0701' AND '0731'

-- case: bigquery_wildcard_whole_dataset
-- dialect: bigquery
-- expect: allow
SELECT COUNT(*) FROM `bigquery-public-data.google_analytics_sample.*`

-- case: bigquery_two_stars_refused
-- dialect: bigquery
-- expect: reject: names a file or URL
SELECT * FROM `project.dataset.events_*_*`

-- case: bigquery_wildcard_of_a_dotted_name_refused
-- dialect: bigquery
-- expect: reject: is not allowed as a table
SELECT * FROM `project.dataset.events.csv*`

-- case: bigquery_unnest_source
-- dialect: bigquery
-- expect: allow
SELECT h.page.pagePath FROM `bigquery-public-data.google_analytics_sample.ga_sessions_20170801`, UNNEST(hits) AS h

-- case: bigquery_field_of_an_array_element
-- dialect: bigquery
-- expect: allow
SELECT name[SAFE_OFFSET(0)].family FROM `patents-public-data.patents.publications`

-- case: bigquery_geography
-- dialect: bigquery
-- expect: allow
SELECT ST_DISTANCE(ST_GEOGPOINT(lon, lat), ST_GEOGPOINT(-74.0, 40.7)) AS d FROM `project.dataset.stations`

-- case: bigquery_declare_script
-- dialect: bigquery
-- expect: reject: 2 statements were sent
DECLARE n INT64 DEFAULT 3; SELECT n

-- case: bigquery_create_temp_function
-- dialect: bigquery
-- expect: reject: 2 statements were sent
CREATE TEMP FUNCTION f(x FLOAT64) AS (x * 2); SELECT f(1.0)

-- case: bigquery_export_data
-- dialect: bigquery
-- expect: reject: is not allowed
EXPORT DATA OPTIONS (uri = 'gs://bucket/x-*.csv', format = 'CSV') AS SELECT * FROM `project.dataset.t`

-- case: snowflake_generator
-- dialect: snowflake
-- expect: allow
SELECT SEQ4() AS n FROM TABLE(GENERATOR(ROWCOUNT => 7))

-- case: snowflake_flatten_in_table
-- dialect: snowflake
-- expect: allow
SELECT f.value FROM t, TABLE(FLATTEN(input => t.tags)) AS f

-- case: snowflake_lateral_flatten
-- dialect: snowflake
-- expect: allow
SELECT f.value:name::STRING FROM db.s.t, LATERAL FLATTEN(input => t.doc) AS f

-- case: snowflake_table_named_by_a_string
-- dialect: snowflake
-- expect: reject: TABLE(...) reads rows here only from a table function
SELECT * FROM TABLE('salaries')

-- case: snowflake_table_named_by_a_variable
-- dialect: snowflake
-- expect: reject: TABLE(...) reads rows here only from a table function
SELECT * FROM TABLE($name)

-- case: snowflake_table_of_a_schema_function
-- dialect: snowflake
-- expect: reject: TABLE(...) reads rows here only from a table function
SELECT * FROM TABLE(INFORMATION_SCHEMA.QUERY_HISTORY())

-- case: snowflake_result_scan
-- dialect: snowflake
-- expect: reject: `result_scan()` is not allowed
SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))

-- case: snowflake_to_timestamp_and_geography
-- dialect: snowflake
-- expect: allow
SELECT TO_TIMESTAMP_NTZ(ts / 1000000) AS t, ST_AREA(TRY_TO_GEOGRAPHY(shape)) AS a FROM "DB"."S"."T"

-- case: snowflake_stage_file
-- dialect: snowflake
-- expect: reject: not allowed
SELECT $1 FROM @my_stage/data.csv

-- case: snowflake_copy_into_location
-- dialect: snowflake
-- expect: reject: `COPY` is not allowed
COPY INTO @my_stage/out FROM t

-- case: spark_at_parameter_written_back_as_substitution
-- dialect: spark
-- expect: reject: `@x` is not allowed on spark: a parameter is sent as `${...}`
SELECT @x

-- case: databricks_at_alias_is_a_parameter
-- dialect: databricks
-- expect: reject: is not allowed on databricks: a parameter is sent as `${...}`
SELECT a FROM t@env:HOME

-- case: spark_dollar_parameter
-- dialect: spark
-- expect: reject: is not allowed on spark: a parameter is sent as `${...}`
SELECT * FROM t WHERE a = $1

-- case: hive_session_parameter
-- dialect: hive
-- expect: reject: is not allowed on spark: a parameter is sent as `${...}`
SELECT @@version
