"""The `jr2` command (engine/management/commands/jr2.py)."""
