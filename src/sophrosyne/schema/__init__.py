"""What a database holds, as data: the catalog, descriptions, inferred joins, and the live schema kept fresh."""
