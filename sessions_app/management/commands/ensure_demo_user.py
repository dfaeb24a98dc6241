"""Create (or reset) a demo login for the embedded default and print it."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the demo user (staff, so the admin is reachable) and print its login."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="nexus-demo")

    def handle(self, *args, username: str, password: str, **options) -> None:
        user, _ = get_user_model().objects.get_or_create(username=username)
        user.is_staff = True
        user.is_superuser = True
        user.set_password(password)
        user.save()
        self.stdout.write(self.style.SUCCESS(f"Demo login: username={username} password={password}"))
