import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nexus.settings")
application = get_wsgi_application()

from nexus.celery import start_embedded_worker  # noqa: E402 - needs Django set up

start_embedded_worker()
