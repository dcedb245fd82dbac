"""`sophrosyne bench`: the sub-app and its commands."""
