"""The command line's commands that talk to a running server (`jr2 run`, `runs`, `status`, `send`, `cancel`):
`client` (the HTTP client, its errors and run id prefixes), `text` (what they print) and `follow` (following a
run as it moves). The management command `engine/management/commands/jr2.py` parses the arguments and calls
these."""
