"""Serving agents: the MCP server, its streamable HTTP transport and the background warm-up.

The CLI chooses the transport; nothing below this folder imports it.
"""
