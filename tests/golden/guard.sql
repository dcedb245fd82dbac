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
