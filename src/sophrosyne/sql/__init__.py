"""SQL on its way to a database: the guard, the allowed functions, the policy rewrite and the one secured path."""
