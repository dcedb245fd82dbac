"""The Python sandbox: an isolated child process whose `sql()` goes through the secured path."""
