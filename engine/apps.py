from django.apps import AppConfig


class EngineConfig(AppConfig):
    name = "engine"
    verbose_name = "jr2 engine"

    def ready(self) -> None:
        from engine import checks, signals  # noqa: F401 - registers the system checks and connects the signal
