-- The catalog the rewrite golden cases run against (also built as a SQLite database by the test).
CREATE TABLE departments (dept_code VARCHAR(8) PRIMARY KEY, dept_name TEXT, budget INTEGER);
CREATE TABLE employees (employee_id INTEGER PRIMARY KEY, name TEXT, department TEXT, manager_id INTEGER, salary INTEGER);
CREATE TABLE absence_records (absence_id INTEGER PRIMARY KEY, employee_id INTEGER, absence_date TEXT, reason TEXT);
CREATE TABLE salaries (employee_id INTEGER, amount INTEGER);
CREATE TABLE "Projects" (project_id INTEGER, dept_code TEXT, title TEXT);
CREATE VIEW v_headcount (department, headcount) AS SELECT department, COUNT(*) FROM employees GROUP BY department;
