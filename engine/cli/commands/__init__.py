"""The commands of `jr2` (engine/management/commands/jr2.py parses the arguments and calls these), one module per
family, each with the arguments its subcommands take:

    serving    check, up, web, worker     the workflows checked, the database migrated, the processes served
    tokens     token                      API tokens, on this project's database
    runs       run, runs, status, send, cancel   against a running server's API (engine/cli/client.py)
    replaying  replay, fork               a run's journal re-run against the workflow; a run started from a step
    testing    test, scenario             scenarios replayed against the current Machines; a run saved as one
    graphing   graph                      a Workflow's graph as SVG, PNG, Mermaid or DOT, from the workflows folder
    exchange   export, import             a run as one JSON file, out of and into a database or a server

Each writes through an `Output` (engine/cli/output.py) and fails with a `CliError` (one line, an exit code) or
Django's `CommandError`.
"""
