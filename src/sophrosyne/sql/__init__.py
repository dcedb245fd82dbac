"""SQL on its way to a database: the guard, the allowed functions, the policy rewrite and the one secured path.

guard (what may run), functions (the allow-list), facts (the server facts a restricted role may not read),
shape (a statement's size), policy/ (a role's rewrite), secure (SecurePath: guard -> rewrite -> read-only
session -> audit), queries (the statements the tools build), hints (performance hints), lookup (names found, or
an error that says what there is).
"""
