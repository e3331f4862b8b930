"""The documentation: its code runs."""
