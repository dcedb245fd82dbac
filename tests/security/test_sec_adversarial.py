"""Adversarial corpus against a restricted role, on SQLite, DuckDB, PostgreSQL and MariaDB.

Every case is sent to `execute_sql` as a role that sees department D042 only, without budgets, hire dates,
absence reasons, notes or order details. A case passes when it is refused with a message that says why, or
when its rows hold no value the role may not see. The database must be unchanged afterwards.
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.engines import SERVER_ENGINES, content_checksum, sha256_file
from fixtures.policies import HIDDEN, ROLE, SECRETS, leaked
from sophrosyne.environment import Environment
from sophrosyne.errors import QueryFailed, SophrosyneError, UnknownColumn, UnknownTable

# {q} quotes an identifier for the engine; {schema} is the database's own schema (or database) name.
CASES: list[str] = [
    # denied tables, every spelling
    "SELECT * FROM notes",
    "SELECT body FROM notes",
    "SELECT * FROM NOTES",
    'SELECT * FROM "notes"',
    "SELECT * FROM `notes`",
    "SELECT * FROM [notes]",
    "SELECT * FROM {q}notes{q}",
    "SELECT * FROM {q}NOTES{q}",
    "SELECT * FROM {schema}.notes",
    "SELECT * FROM {q}{schema}{q}.{q}notes{q}",
    "SELECT * FROM main.notes",
    "SELECT * FROM public.notes",
    "SELECT * FROM temp.notes",
    "SELECT * FROM memory.main.notes",
    "SELECT * FROM hr.main.notes",
    "SELECT * FROM test.{schema}.notes",
    "SELECT * FROM {q}Order Details{q}",
    "SELECT * FROM {q}order details{q}",
    "SELECT * FROM {schema}.{q}Order Details{q}",
    "SELECT n.* FROM notes AS n",
    "SELECT * FROM notes n WHERE n.note_id = 1",
    "SELECT COUNT(*) FROM notes",
    "SELECT * FROM notes LIMIT 1",
    "SELECT * FROM employees, notes",
    "SELECT * FROM employees CROSS JOIN notes",
    "SELECT * FROM employees e JOIN notes n ON n.note_id = e.employee_id",
    "SELECT * FROM employees e LEFT JOIN notes n ON 1 = 1",
    "SELECT * FROM notes NATURAL JOIN employees",
    "SELECT * FROM employees e JOIN notes USING (note_id)",
    # denied tables in every kind of subquery
    "SELECT * FROM employees WHERE employee_id IN (SELECT note_id FROM notes)",
    "SELECT * FROM employees WHERE EXISTS (SELECT 1 FROM notes WHERE body LIKE 'O%')",
    "SELECT (SELECT body FROM notes LIMIT 1) AS b",
    "SELECT (SELECT MAX(body) FROM notes) AS b FROM employees",
    "SELECT * FROM (SELECT * FROM notes) AS x",
    "SELECT * FROM (SELECT * FROM (SELECT * FROM notes) AS y) AS x",
    "SELECT * FROM employees e WHERE e.full_name = ANY (SELECT body FROM notes)",
    "SELECT full_name FROM employees UNION SELECT body FROM notes",
    "SELECT full_name FROM employees UNION ALL SELECT body FROM notes",
    "SELECT body FROM notes INTERSECT SELECT body FROM notes",
    "SELECT body FROM notes EXCEPT SELECT full_name FROM employees",
    "SELECT department, COUNT(*) FROM employees GROUP BY department HAVING COUNT(*) < (SELECT COUNT(*) FROM notes)",
    "SELECT * FROM employees ORDER BY (SELECT MAX(note_id) FROM notes)",
    "SELECT full_name, (SELECT COUNT(*) FROM notes) OVER () FROM employees",
    "SELECT * FROM employees e, LATERAL (SELECT body FROM notes WHERE note_id = e.employee_id) AS x",
    "SELECT * FROM employees e CROSS JOIN LATERAL (SELECT * FROM notes) AS x",
    "SELECT * FROM employees e JOIN notes n ON n.note_id = (SELECT MIN(note_id) FROM notes)",
    "SELECT CASE WHEN EXISTS (SELECT 1 FROM notes) THEN 'yes' END",
    "SELECT COALESCE((SELECT body FROM notes LIMIT 1), 'none')",
    "SELECT * FROM employees WHERE full_name IN (SELECT body FROM notes UNION SELECT tag FROM notes)",
    "VALUES ((SELECT body FROM notes LIMIT 1))",
    "SELECT * FROM (VALUES (1)) AS v(x) WHERE EXISTS (SELECT 1 FROM notes)",
    # CTEs: bodies, nesting, shadowing, forward and recursive references
    "WITH x AS (SELECT * FROM notes) SELECT * FROM x",
    "WITH x AS (SELECT * FROM employees), y AS (SELECT * FROM notes) SELECT * FROM x, y",
    "WITH employees AS (SELECT * FROM notes) SELECT * FROM employees",
    "WITH departments AS (SELECT body AS dept_code FROM notes) SELECT * FROM departments",
    "WITH notes AS (SELECT 1 AS x) SELECT * FROM notes",
    "WITH notes AS (SELECT * FROM notes) SELECT * FROM notes",
    "WITH a AS (SELECT * FROM notes), notes AS (SELECT 1 AS x) SELECT * FROM a",
    "WITH RECURSIVE a AS (SELECT * FROM notes), notes AS (SELECT 1 AS x) SELECT * FROM a",
    "WITH a AS (SELECT * FROM employees), employees AS (SELECT * FROM a) SELECT * FROM employees",
    "WITH RECURSIVE employees AS (SELECT * FROM employees) SELECT * FROM employees",
    "WITH RECURSIVE notes(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM notes WHERE n < 3) SELECT * FROM notes",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r, notes",
    'WITH "NOTES" AS (SELECT 1 AS x) SELECT * FROM notes',
    'WITH "Notes" AS (SELECT 1 AS x) SELECT * FROM "notes"',
    "WITH NOTES AS (SELECT 1 AS x) SELECT * FROM {q}notes{q}",
    "SELECT * FROM (WITH notes AS (SELECT 1 AS x) SELECT * FROM notes) AS a, notes",
    "WITH x AS (SELECT * FROM (WITH y AS (SELECT * FROM notes) SELECT * FROM y) AS z) SELECT * FROM x",
    "WITH x AS (SELECT 1 AS a) SELECT * FROM x WHERE EXISTS (WITH y AS (SELECT * FROM notes) SELECT * FROM y)",
    "WITH _sec_employees AS (SELECT * FROM notes) SELECT * FROM _sec_employees",
    "WITH _sec_notes AS (SELECT 1 AS x) SELECT * FROM _sec_notes, notes",
    "SELECT * FROM _sec_employees",
    "SELECT * FROM _sec_notes",
    "WITH x AS (SELECT * FROM employees) SELECT * FROM x AS notes",
    "WITH x AS MATERIALIZED (SELECT * FROM notes) SELECT * FROM x",
    "WITH x AS NOT MATERIALIZED (SELECT * FROM notes) SELECT * FROM x",
    # aliases that look like other tables
    "SELECT * FROM employees AS notes",
    "SELECT notes.* FROM employees notes",
    "SELECT * FROM employees AS _sec_employees",
    "SELECT * FROM departments AS employees, employees AS departments",
    "SELECT budget FROM departments AS d, (SELECT 1 AS budget) AS x",
    # hidden columns
    "SELECT budget FROM departments",
    "SELECT d.budget FROM departments d",
    "SELECT departments.budget FROM departments",
    "SELECT {schema}.departments.budget FROM {schema}.departments",
    "SELECT {q}budget{q} FROM departments",
    "SELECT BUDGET FROM departments",
    "SELECT * FROM departments",
    "SELECT d.* FROM departments d",
    "SELECT hire_date FROM employees",
    "SELECT MAX(hire_date) FROM employees",
    "SELECT COUNT(*) FROM employees WHERE hire_date > '2020-01-01'",
    "SELECT full_name FROM employees ORDER BY hire_date",
    "SELECT full_name FROM employees GROUP BY full_name, hire_date",
    "SELECT reason FROM absence_records",
    "SELECT DISTINCT reason FROM absence_records",
    "SELECT COUNT(*) FROM absence_records WHERE reason = 'sick'",
    "SELECT * FROM absence_records a JOIN employees e USING (employee_id)",
    "SELECT (SELECT budget FROM departments LIMIT 1)",
    "SELECT e.full_name FROM employees e WHERE EXISTS (SELECT 1 FROM departments d WHERE d.budget > 0)",
    "SELECT d FROM departments d",
    "SELECT row_to_json(d) FROM departments d",
    "SELECT to_json(d) FROM departments d",
    "SELECT json_object('b', budget) FROM departments",
    "SELECT rowid, * FROM departments",
    "SELECT ctid, * FROM departments",
    "SELECT * FROM departments d (a, b, c)",
    "SELECT * FROM departments AS d(a, b, c, e)",
    "SELECT c FROM departments AS d(a, b, c)",
    # row filters: predicates cannot widen the scope
    "SELECT * FROM employees WHERE department <> 'D042'",
    "SELECT * FROM employees WHERE 1 = 1 OR department <> 'D042'",
    "SELECT * FROM employees WHERE department = 'D042' OR TRUE",
    "SELECT full_name FROM employees WHERE department IN ('D017', 'D063', 'D100', 'D205')",
    "SELECT dept_name FROM departments",
    "SELECT dept_name FROM departments WHERE dept_code <> 'D042'",
    "SELECT * FROM departments d1 JOIN departments d2 ON d1.dept_code <> d2.dept_code",
    "SELECT e.full_name, m.full_name FROM employees e LEFT JOIN employees m ON m.employee_id = e.manager_id",
    "SELECT * FROM absence_records WHERE employee_id NOT IN (SELECT employee_id FROM employees)",
    "SELECT full_name FROM employees e WHERE NOT EXISTS (SELECT 1 FROM departments d WHERE d.dept_code = e.department)",
    "SELECT department, COUNT(*) FROM employees GROUP BY department",
    "SELECT COUNT(*) FROM employees",
    "SELECT dept_name FROM departments UNION SELECT full_name FROM employees",
    "SELECT full_name FROM employees ORDER BY employee_id DESC LIMIT 3 OFFSET 0",
    # error oracles: a predicate must never run on a row the filter drops
    "SELECT COUNT(*) FROM employees WHERE employee_id = 2 AND CAST(full_name AS INTEGER) = 1",
    "SELECT COUNT(*) FROM employees WHERE CAST(full_name AS INTEGER) = 1",
    "SELECT COUNT(*) FROM departments WHERE dept_code = 'D100' AND CAST(dept_name AS INTEGER) = 1",
    "SELECT COUNT(*) FROM absence_records WHERE record_id = 1 AND CAST(absence_date AS INTEGER) = 1",
    "SELECT COUNT(*) FROM employees WHERE 1 / (CASE WHEN full_name = 'Bruno Costa' THEN 0 ELSE 1 END) = 1",
    "SELECT COUNT(*) FROM employees WHERE EXP(CASE WHEN department = 'D017' THEN 1000 ELSE 0 END) > 0",
    "SELECT COUNT(*) FROM departments WHERE EXP(CASE WHEN dept_name = 'Finance' THEN 1000 ELSE 0 END) > 0",
    "SELECT COUNT(*) FROM employees e WHERE e.employee_id = 1 AND CAST(e.department AS INTEGER) = 0",
    # catalogs and system tables
    "SELECT * FROM sqlite_master",
    "SELECT sql FROM sqlite_schema",
    "SELECT * FROM sqlite_temp_master",
    "SELECT * FROM main.sqlite_master",
    "SELECT * FROM sqlite_stat1",
    "SELECT * FROM sqlite_sequence",
    "SELECT * FROM pragma_table_info('notes')",
    "SELECT * FROM pragma_table_list",
    "SELECT * FROM pragma_table_info('departments')",
    "SELECT * FROM information_schema.tables",
    "SELECT column_name FROM information_schema.columns WHERE table_name = 'departments'",
    "SELECT * FROM INFORMATION_SCHEMA.COLUMNS",
    "SELECT * FROM pg_catalog.pg_class",
    "SELECT relname FROM pg_class",
    "SELECT attname FROM pg_attribute",
    "SELECT * FROM pg_tables",
    "SELECT * FROM pg_stats",
    "SELECT most_common_vals FROM pg_stats WHERE tablename = 'notes'",
    "SELECT * FROM pg_stat_user_tables",
    "SELECT * FROM pg_views",
    "SELECT * FROM mysql.user",
    "SELECT * FROM performance_schema.threads",
    "SELECT * FROM sys.schema_table_statistics",
    "SELECT * FROM duckdb_tables()",
    "SELECT * FROM duckdb_columns()",
    "SELECT * FROM duckdb_views()",
    "SELECT * FROM duckdb_tables",
    "SHOW TABLES",
    "DESCRIBE notes",
    "PRAGMA table_info(notes)",
    "SUMMARIZE notes",
    "TABLE notes",
    "FROM notes",
    "SELECT * FROM department_headcount",
    "SELECT * FROM {schema}.department_headcount",
    # functions that read by name, run SQL text, or read the catalog or files
    "SELECT query_to_xml('SELECT * FROM notes', true, false, '')",
    "SELECT table_to_xml('notes', true, false, '')",
    "SELECT * FROM query('SELECT * FROM notes')",
    "SELECT * FROM query_table('notes')",
    "SELECT to_regclass('notes')",
    "SELECT 'notes'::regclass",
    "SELECT CAST('notes' AS regclass)",
    "SELECT has_table_privilege('notes', 'select')",
    "SELECT pg_get_viewdef('department_headcount')",
    "SELECT obj_description('notes'::regclass)",
    "SELECT col_description(1, 1)",
    "SELECT current_setting('search_path')",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT load_file('/etc/passwd')",
    "SELECT LOAD_FILE('/etc/passwd')",
    "SELECT readfile('/etc/passwd')",
    "SELECT sqlite_version(), * FROM notes",
    "SELECT my_function(1)",
    "SELECT dblink('dbname=test', 'SELECT body FROM notes')",
    # comments, quoting and Unicode tricks
    "SELECT * FROM/**/notes",
    "SELECT * FROM employees -- \nUNION SELECT * FROM notes",
    "SELECT * FROM employees /* */ UNION /* */ SELECT note_id, body, tag, archived_at, NULL FROM notes",
    "SELECT 1 /*! , (SELECT body FROM notes LIMIT 1) */",
    "SELECT 1 /*!50000 , (SELECT body FROM notes LIMIT 1) */",
    "SELECT 1 /*M! , (SELECT body FROM notes LIMIT 1) */",
    "SELECT 1 -- */ , (SELECT body FROM notes) /*\n",
    "SELECT 1 # x\n, (SELECT body FROM notes LIMIT 1)",
    "SELECT * FROM employees; SELECT * FROM notes",
    "SELECT * FROM employees;\nSELECT * FROM notes;",
    "SELECT * FROM n\u043ates",
    "SELECT * FROM no\u200btes",
    "SELECT * FROM ｎｏｔｅｓ",
    'SELECT * FROM U&"no\\0074es"',
    'SELECT * FROM "no""tes"',
    'SELECT \'x\' AS "a""b", * FROM employees',
    "SELECT * FROM employees WHERE full_name = 'x'' UNION SELECT body FROM notes --'",
    "SELECT * FROM employees WHERE full_name = 'x\\' UNION SELECT body, 1, 1, 1, 1 FROM notes -- '",
    "SELECT $$ UNION SELECT body FROM notes $$",
    "SELECT E'\\' UNION SELECT body FROM notes --'",
    # writes (the guard's and the engine's business, checked here too)
    "DELETE FROM employees",
    "UPDATE departments SET budget = 0",
    "WITH d AS (DELETE FROM notes RETURNING *) SELECT * FROM d",
    "SELECT * INTO evil FROM notes",
    "SELECT * INTO evil FROM employees",
    "CREATE TABLE evil AS SELECT * FROM notes",
    "INSERT INTO employees SELECT * FROM employees",
    "DROP TABLE notes",
]


def render(template: str, engine: str, target: str) -> str:
    quote = {"mariadb": "`"}.get(engine, '"')
    if engine == "postgres":
        schema = target.rsplit("%3D", 1)[1]
    elif engine == "mariadb":
        schema = target.rsplit("/", 1)[1]
    else:
        schema = "main"
    return template.replace("{q}", quote).replace("{schema}", schema)


@pytest.fixture(scope="module")
def restricted(env: Environment) -> Environment:
    return env.for_role(ROLE)


def fingerprint(engine: str, target: str) -> str:
    return content_checksum(engine, target) if engine in SERVER_ENGINES else sha256_file(target)


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 150
    assert len(set(CASES)) == len(CASES)
    assert len(SECRETS) > 40


def test_secrets_really_are_in_the_database(env: Environment) -> None:
    """Guards the test: the unrestricted role does see secret values, so the detector can fire."""
    rows = env.execute_sql("SELECT body FROM notes").rows + env.execute_sql("SELECT dept_name FROM departments").rows
    assert leaked(rows)


def test_adversarial_corpus_reaches_no_data(restricted: Environment, engine: str, target: str) -> None:
    before = fingerprint(engine, target)
    leaks, silent = [], []
    for template in CASES:
        sql = render(template, engine, target)
        try:
            result = restricted.execute_sql(sql)
        except SophrosyneError as error:
            if not error.message.strip():
                silent.append(sql)
            continue
        found = leaked(result.rows)
        if found:
            leaks.append((sql, found[:3]))
    assert leaks == []
    assert silent == []
    assert fingerprint(engine, target) == before


def test_denied_and_missing_tables_look_the_same(restricted: Environment) -> None:
    def message(call: Any) -> str:
        with pytest.raises(UnknownTable) as info:
            call()
        return info.value.message

    for name in ("notes", "department_headcount", "sqlite_master"):
        assert message(lambda n=name: restricted.execute_sql(f"SELECT * FROM {n}")).replace(name, "X") == message(
            lambda: restricted.execute_sql("SELECT * FROM no_such_table")
        ).replace("no_such_table", "X")
        assert message(lambda n=name: restricted.describe_table(n)).replace(name, "X") == message(
            lambda: restricted.describe_table("no_such_table")
        ).replace("no_such_table", "X")


def test_hidden_columns_are_absent_from_every_tool(restricted: Environment) -> None:
    tables = {t.name for t in restricted.list_tables().tables}
    assert tables == {"departments", "employees", "absence_records"}
    for table, column in HIDDEN:
        described = restricted.describe_table(table)
        assert column not in [c.name for c in described.columns]
        with pytest.raises(UnknownColumn):
            restricted.get_distinct_values(table, column)
        with pytest.raises((UnknownColumn, QueryFailed)):
            restricted.execute_sql(f"SELECT {column} FROM {table}")


def test_tools_return_only_rows_in_scope(restricted: Environment) -> None:
    names = {v.value for v in restricted.get_distinct_values("departments", "dept_name").values}
    assert names == {"Operations and Logistics"}
    codes = {v.value for v in restricted.get_distinct_values("employees", "department").values}
    assert codes == {"D042"}
    for term in ["Finance", "Research", "discount", "alpha", "Lovelace", "Costa", "sick"]:
        found = restricted.find_rows(term)
        assert leaked([row for m in found.matches for row in m.rows]) == [], term
    for table in ("departments", "employees", "absence_records"):
        described = restricted.describe_table(table)
        assert leaked([c.samples for c in described.columns]) == []
        assert described.row_estimate is None


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT (SELECT COUNT(*) FROM employees), 1 + (SELECT MAX(e.employee_id) FROM employees AS e) FROM departments",
        "SELECT COUNT(*) * 100 / (SELECT COUNT(*) FROM employees WHERE department = 'D042') FROM employees",
        'SELECT (SELECT MIN("dept_code") FROM "departments") FROM employees AS employees',
    ],
)
def test_headers_read_as_written_whatever_the_role(env: Environment, restricted: Environment, sql: str) -> None:
    """An unaliased computed column is named by its text (SQLite, MariaDB) or the engine's rendering of it
    (DuckDB): a role's renamed references (`_sec_employees AS employees`) must not show in the header."""
    expected = env.execute_sql(sql).columns
    got = restricted.execute_sql(sql).columns
    assert got == expected
    assert not any("_sec_" in column for column in got)
