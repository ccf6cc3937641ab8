from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents and sessions"

    def ready(self) -> None:
        # The kinds of background job, registered with the queue by the capabilities they belong to: the worker
        # runs them, and a job's page shows their results (agents.jobs.queue.job_kind).
        from agents.lab import reports  # noqa: F401
        from agents.transfer import background  # noqa: F401
