"""A bare MCPServer with one echo tool, over stdio: what the SDK alone costs (start-up and a round trip).

The latency and peer benchmarks run it beside `sophrosyne serve`. Example: python benchmarks/echo_server.py
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer(name="echo")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    server.run("stdio")
