"""factory-boy factories for the models.

Episodes are created through the write service, so the session's counters
stay equal to the aggregate in every test that uses them.
"""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from sessions_app.models import ChatSession, Episode
from sessions_app.services import episode_create
from sessions_app.tokens import count_tokens
from summaries.coverage import refresh_coverage
from summaries.models import Summary, UtilityCall


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "correct-horse-battery")

    @factory.post_generation
    def _save_password(obj, create, extracted, **kwargs):  # noqa: N805
        if create:
            obj.save(update_fields=["password"])


class ChatSessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ChatSession

    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda n: f"Session {n}")


class EpisodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Episode

    session = factory.SubFactory(ChatSessionFactory)
    user_input = factory.Sequence(lambda n: f"Question number {n} about the topic?")
    response = factory.Sequence(lambda n: f"Answer number {n}. It explains the topic. Then more detail.")
    metadata = factory.LazyFunction(dict)

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return episode_create(**kwargs)


class SummaryFactory(factory.django.DjangoModelFactory):
    """A summary row written straight to the table, with its positions read
    from its episodes and the state row's coverage brought up to date, as
    every service that writes the chain does."""

    class Meta:
        model = Summary

    session = factory.SubFactory(ChatSessionFactory)
    content = factory.Sequence(lambda n: f"The user and the assistant discussed topic {n}.")
    token_count = factory.LazyAttribute(lambda s: count_tokens(s.content))
    first_episode_id = 1
    last_episode_id = factory.LazyAttribute(lambda s: s.first_episode_id)

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        if "first_position" not in kwargs:
            kwargs["first_position"], kwargs["last_position"] = Episode.objects.range_positions(
                kwargs["session"].pk, kwargs["first_episode_id"], kwargs["last_episode_id"]
            )
        row = super()._create(model_class, *args, **kwargs)
        refresh_coverage(row.session_id)
        return row


class UtilityCallFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = UtilityCall

    session = factory.SubFactory(ChatSessionFactory)
    kind = UtilityCall.Kind.FRESH
    model = "qwen2.5:1.5b"
    outcome = UtilityCall.Outcome.OK
    first_episode_id = 1
    last_episode_id = factory.LazyAttribute(lambda c: c.first_episode_id)
