"""Django management commands of the engine app: `python manage.py jr2 ...`."""
