"""`kinetoscope mcp`: the reader as Model Context Protocol tools for coding agents.

`paths` confines every file the tools touch to one root folder, `tools` answers
each tool with the JSON the CLI writes (trimmed to fit an agent's context), and
`server` wires them to the `mcp` SDK over stdio.
"""
