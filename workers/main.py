"""Entry module for the ``celery`` command (``celery -A workers.main inspect ping``): the one
place the worker side builds its settings. ``factsieve worker`` does the same in-process."""
from plugin.settings import Settings
from workers.app import create_celery

app = create_celery(Settings())
