"""The build step: Trace -> analyses -> rules -> the data every renderer lays out.

`build.build_report` turns a Trace into the `report.model.Report` (with `sections`,
`interactive` and `timeline_data` for its parts); `timeline_sides` builds the timelines of
the multi-run pages; the `*_data` modules are the JSON builders the CLI and the MCP tools
share (`chain`, `memory`, `summary`, `table`). This is where analyses run; `report/` only
renders what this package returns.
"""
