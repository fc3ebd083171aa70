from django.apps import AppConfig


class OnlineConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "online"
    verbose_name = "Online signals"

    def ready(self) -> None:
        from online import job_links

        job_links.register()  # the page of a click log's job links the log (pooling imports nothing of ours)
