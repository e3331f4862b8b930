"""The `jr2` console script: the same commands as `python manage.py jr2 ...`."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jr2.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line([sys.argv[0], "jr2", *sys.argv[1:]])


if __name__ == "__main__":  # `python -m jr2.cli ...`: the same, under this exact interpreter
    sys.argv[0] = "jr2"
    main()
