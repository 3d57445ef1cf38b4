"""Celery workers: ``workers.app.create_celery(settings)`` and the thin tasks in ``workers.tasks``."""
