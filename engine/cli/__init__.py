"""The command line `jr2`: the management command engine/management/commands/jr2.py parses the arguments and calls
`commands/` (one module per family of subcommands). Beside them: `client` (the HTTP client for a running server, its
errors and run id prefixes), `local` (the same lookups on this project's database), `text` (what the commands print
about runs), `follow` (following a run as it moves) and `output` (where a command writes)."""
