from django.apps import AppConfig


class EngineConfig(AppConfig):
    name = "engine"
    verbose_name = "jr2 engine"

    def ready(self) -> None:
        from . import signals, system_checks  # noqa: F401 - connects the signal and registers the checks
