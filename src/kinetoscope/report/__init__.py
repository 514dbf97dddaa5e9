"""Reports: `build.build_report` gathers a `Report`; one module per output format renders it."""
