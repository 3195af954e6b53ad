"""One module per CLI subcommand; see `styleforge.cli`."""
