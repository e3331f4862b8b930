"""The Django project package of jr2: settings, URLs and the ASGI entry point."""
