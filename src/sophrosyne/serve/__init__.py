"""The MCP server: tool definitions, auth, the handshake, workers, health and draining."""
