from django.apps import AppConfig


class QueuesConfig(AppConfig):
    name = "queues"
    verbose_name = "Scheduling"

    def ready(self) -> None:
        from queues import checks  # noqa: F401  (registers the system checks)
        from queues.models import catalog

        catalog.connect()
