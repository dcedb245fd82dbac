"""The agent: tools over an Environment or any MCP server, the explorer and FlexSQL solvers, a Python sandbox."""
