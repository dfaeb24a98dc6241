"""A bad setting stops start-up with a message naming the variable."""

import os
import subprocess
import sys

import pytest


def run_check(**env_overrides: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUMMARY_", "DJANGO_", "CELERY_", "OLLAMA_"))}
    env.pop("DATABASE_URL", None)
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SUMMARY_MIN_EPISODES", "abc"),
        ("SUMMARY_THRESHOLD_TOKENS", "-3"),
        ("SUMMARY_TEMPERATURE", "warm"),
        ("DJANGO_DEBUG", "maybe"),
        ("INFERENCE_BACKEND", "gpt"),
        ("DATABASE_URL", "nosuchdb://x"),
        ("CELERY_BROKER_URL", "ftp://example"),
        ("OLLAMA_NUM_CTX_MAX", "lots"),
        ("OLLAMA_NUM_CTX_MAX", "2048"),
        ("SESSION_RETENTION_DAYS", "-1"),
        ("SUMMARY_REVISION_RETENTION_DAYS", "a week"),
    ],
)
def test_bad_value_names_the_variable(name, value):
    result = run_check(**{"DJANGO_DEBUG": "1", name: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr


def test_secret_key_required_without_debug():
    result = run_check(DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_good_environment_starts():
    result = run_check(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="x" * 50, SUMMARY_MIN_EPISODES="7")
    assert result.returncode == 0, result.stderr


def test_defaults_match_the_design(settings):
    assert settings.SUMMARY_THRESHOLD_TOKENS == 200
    assert settings.SUMMARY_MAX_TOKENS == 800
    assert settings.SUMMARY_MIN_EPISODES == 5
    assert settings.SUMMARY_TEMPERATURE == 0.2
    assert settings.SUMMARY_GEN_MAX_TOKENS == 500
    assert settings.SUMMARY_MAX_CHARS == 3000
    assert settings.CONTEXT_RECENT_EPISODES == 8
    assert settings.OLLAMA_NUM_CTX_MAX == 32_768
