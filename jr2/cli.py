"""The `jr2` console script: the same commands as `python manage.py jr2 ...`, in a project folder of one's own.

`jr2 --project DIR <command>` (or `JR2_HOME=DIR`) names the project folder; without either it is the folder `jr2`
runs in. It is read before Django's settings are, since they put the database and the workspaces in it; so is
`jr2 up --debug` (JR2_DEBUG=1). `jr2 manage <command>` runs one of Django's own management commands on the
project (`jr2 manage createsuperuser`, `jr2 manage changepassword admin`).
"""

import os
import sys


def _take_project(argv: list[str]) -> list[str]:
    """`--project DIR` / `--project=DIR` anywhere in the arguments becomes JR2_HOME; the rest go on."""
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--project":
            folder = next(args, None)
            if folder is None:
                sys.exit("jr2: --project needs a folder")
            os.environ["JR2_HOME"] = os.path.abspath(folder)
        elif arg.startswith("--project="):
            os.environ["JR2_HOME"] = os.path.abspath(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    return rest


def main() -> None:
    args = _take_project(sys.argv[1:])
    if args[:1] in (["up"], ["web"]) and "--debug" in args:
        os.environ["JR2_DEBUG"] = "1"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jr2.settings")
    from django.core.management import execute_from_command_line

    if args[:1] == ["manage"]:
        execute_from_command_line([f"{sys.argv[0]} manage", *args[1:]])
    else:
        execute_from_command_line([sys.argv[0], "jr2", *args])


if __name__ == "__main__":  # `python -m jr2.cli ...`: the same, under this exact interpreter
    sys.argv[0] = "jr2"
    main()
