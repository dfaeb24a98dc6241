"""Create (or reset) the demo login of the embedded default and print it.

Only ``bin/run`` calls this, and only while debugging: the password is
published in the README and reset on every start, so the login is an
ordinary user (no staff, no superuser) and the command refuses to run with
DEBUG off. A production-shaped stack makes its admin with
``manage.py createsuperuser``.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create the demo user of the embedded default (DEBUG only; not staff) and print its login."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="nexus-demo")

    def handle(self, *args, username: str, password: str, **options) -> None:
        if not settings.DEBUG:
            raise CommandError(
                "ensure_demo_user only runs with DJANGO_DEBUG=1 (bin/run): its password is published. "
                "Create an admin with `manage.py createsuperuser` instead."
            )
        user, _ = get_user_model().objects.get_or_create(username=username)
        user.is_staff = False
        user.is_superuser = False
        user.set_password(password)
        user.save()
        self.stdout.write(self.style.SUCCESS(f"Demo login: username={username} password={password}"))
