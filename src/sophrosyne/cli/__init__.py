"""The `sophrosyne` command: a thin adapter that parses, calls Environment and renders."""
