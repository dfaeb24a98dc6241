"""A bad setting stops start-up with a message naming the variable."""

import json
import subprocess
import sys

import pytest

from tests.process_support import env_without


def run_check(**env_overrides: str) -> subprocess.CompletedProcess:
    env = env_without("SUMMARY_", "DJANGO_", "CELERY_", "OLLAMA_")
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
        ("CACHE_URL", "memcached://127.0.0.1:11211"),
        ("CACHE_URL", "localhost:6379"),
        ("JSON_MAX_DEPTH", "1000"),
        ("LOGIN_FAILURE_LIMIT", "ten"),
        ("LOGIN_FAILURE_ADDRESS_LIMIT", "10/15 minutes"),
        ("UTILITY_CALLS_PER_USER_HOUR", "many"),
        ("UTILITY_CALLS_PER_USER_HOUR", "2.5"),
        ("UTILITY_CALLS_PER_USER_HOUR", "0"),
        ("UTILITY_CALLS_PER_USER_HOUR", "-5"),
        ("DATABASE_STATEMENT_TIMEOUT_MS", "10s"),
        ("DATABASE_STATEMENT_TIMEOUT_MS", "-1"),
        ("OPENAI_MODEL_ALIASES", "gpt-4o-mini"),
        ("OPENAI_MODEL_ALIASES", "gpt-4o-mini=a-model-not-served"),
        ("OPENAI_MODEL_ALIASES", "*=qwen2.5:7b,*=qwen2.5:7b"),
        ("SESSION_MEMORY_DEFAULT", "everyone"),
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


def test_model_aliases_naming_the_chat_model_start():
    result = run_check(
        DJANGO_DEBUG="1", CHAT_MODEL="qwen2.5:7b", OPENAI_MODEL_ALIASES="gpt-4o-mini=qwen2.5:7b, *=qwen2.5:7b"
    )
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
    assert settings.SESSION_MEMORY_DEFAULT == "shared"


def caches_for(**env_overrides: str) -> dict:
    env = env_without("CACHE_", "DJANGO_", "CELERY_")
    env.update({"DJANGO_DEBUG": "1", "DJANGO_SETTINGS_MODULE": "nexus.settings", **env_overrides})
    code = "import json; from django.conf import settings; print(json.dumps(settings.CACHES['default']))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_cache_is_the_database_without_redis():
    # Never each process's own memory: every process of the deployment shares it.
    assert caches_for()["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"
    assert caches_for()["LOCATION"] == "nexus_cache"
    assert caches_for(CELERY_BROKER_URL="amqp://mq")["BACKEND"].endswith("DatabaseCache")
    assert caches_for(CACHE_URL="db://")["BACKEND"].endswith("DatabaseCache")


def test_cache_follows_a_redis_broker_with_its_own_key_prefix():
    cache = caches_for(CELERY_BROKER_URL="redis://broker:6379/2")
    assert cache["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert cache["LOCATION"] == "redis://broker:6379/2"
    # Celery's keys (queues, "_kombu.*", "unacked*") never start with it.
    assert cache["KEY_PREFIX"] == "nexus-cache"


def test_cache_url_wins():
    cache = caches_for(CELERY_BROKER_URL="redis://broker:6379/2", CACHE_URL="rediss://cache:6380/1")
    assert (cache["BACKEND"], cache["LOCATION"]) == ("django.core.cache.backends.redis.RedisCache", "rediss://cache:6380/1")
    assert caches_for(CELERY_BROKER_URL="redis://broker", CACHE_URL="locmem://")["BACKEND"].endswith("LocMemCache")


def setting_for(name: str, **env_overrides: str):
    """A setting's value as the settings module reads it from this environment."""
    env = env_without("DJANGO_")
    env.pop(name, None)
    env.update({"DJANGO_DEBUG": "1", "DJANGO_SETTINGS_MODULE": "nexus.settings", **env_overrides})
    code = f"import json; from django.conf import settings; print(json.dumps(settings.{name}))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


POSTGRES_URL = "postgres://nexus@db.example:5432/nexus"


def database_for(**env_overrides: str) -> subprocess.CompletedProcess:
    env = env_without("DATABASE_", "DJANGO_")
    env.update({"DJANGO_DEBUG": "1", "DJANGO_SETTINGS_MODULE": "nexus.settings", **env_overrides})
    # A callable (the pool's reset) is written as its dotted name.
    code = (
        "import json; from django.conf import settings; print(json.dumps(settings.DATABASES['default'],"
        " default=lambda f: f'{f.__module__}.{f.__qualname__}'))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env, timeout=60
    )


def database(**env_overrides: str) -> dict:
    result = database_for(**env_overrides)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_model_call_cap_is_off_unless_set():
    assert setting_for("UTILITY_CALLS_PER_USER_HOUR") is None
    assert setting_for("UTILITY_CALLS_PER_USER_HOUR", UTILITY_CALLS_PER_USER_HOUR=" ") is None
    assert setting_for("UTILITY_CALLS_PER_USER_HOUR", UTILITY_CALLS_PER_USER_HOUR="30") == 30


def test_postgresql_connections_come_from_a_pool():
    db = database(DATABASE_URL=POSTGRES_URL)
    # The pool keeps the connections; Django hands them back at the end of each request.
    assert db["CONN_MAX_AGE"] == 0
    # A connection back in the pool loses what a request set on it (nexus.statement_timeout).
    reset = "nexus.database_settings.reset_connection"
    assert db["OPTIONS"]["pool"] == {"min_size": 1, "max_size": 8, "timeout": 5, "reset": reset}
    sized = database(DATABASE_URL=POSTGRES_URL, DATABASE_POOL_MAX_SIZE="3", DATABASE_CONNECT_TIMEOUT="2")
    assert sized["OPTIONS"]["pool"] == {"min_size": 1, "max_size": 3, "timeout": 2, "reset": reset}


def test_a_web_requests_statements_are_bounded_at_ten_seconds_unless_set():
    assert setting_for("DATABASE_STATEMENT_TIMEOUT_MS") == 10_000
    assert setting_for("DATABASE_STATEMENT_TIMEOUT_MS", DATABASE_STATEMENT_TIMEOUT_MS="0") == 0
    assert setting_for("DATABASE_STATEMENT_TIMEOUT_MS", DATABASE_STATEMENT_TIMEOUT_MS="2500") == 2500


def test_a_connection_lifetime_asks_for_persistent_connections_instead():
    db = database(DATABASE_URL=POSTGRES_URL, DATABASE_CONN_MAX_AGE="600")
    assert db["CONN_MAX_AGE"] == 600 and "pool" not in db["OPTIONS"]
    assert "pool" not in database(DATABASE_URL=POSTGRES_URL, DATABASE_POOL="0")["OPTIONS"]
    # SQLite has no pool: persistent connections as before.
    assert database()["CONN_MAX_AGE"] == 60


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DATABASE_POOL": "1", "DATABASE_CONN_MAX_AGE": "60"}, "DATABASE_CONN_MAX_AGE"),
        ({"DATABASE_POOL": "maybe"}, "DATABASE_POOL"),
        ({"DATABASE_POOL_MAX_SIZE": "0"}, "DATABASE_POOL_MAX_SIZE"),
    ],
)
def test_bad_pool_settings_name_the_variable(env, named):
    result = database_for(DATABASE_URL=POSTGRES_URL, **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and named in result.stderr


# --- the settings file and the secret key file that bin/run writes ------------------


def show_settings(code: str, **env_overrides: str) -> subprocess.CompletedProcess:
    env = env_without("DJANGO_", "NEXUS_", "DATABASE_")
    env.update(DJANGO_SETTINGS_MODULE="nexus.settings", **env_overrides)
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); from django.conf import settings; {code}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_env_file_is_read_and_the_environment_wins(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("DJANGO_DEBUG=1\nSUMMARY_MIN_EPISODES=7\nCONTEXT_RECENT_EPISODES=3\n")
    shown = show_settings(
        "print(settings.DEBUG, settings.SUMMARY_MIN_EPISODES, settings.CONTEXT_RECENT_EPISODES)",
        NEXUS_ENV_FILE=str(env_file),
        NEXUS_SECRET_KEY_FILE="",
        CONTEXT_RECENT_EPISODES="5",
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["True", "7", "5"]


def test_a_missing_env_file_named_by_the_variable_stops_start_up(tmp_path):
    shown = show_settings("print(1)", NEXUS_ENV_FILE=str(tmp_path / "nowhere.env"), DJANGO_DEBUG="1")
    assert shown.returncode != 0
    assert "NEXUS_ENV_FILE" in shown.stderr and "Traceback" in shown.stderr


def test_the_generated_secret_key_file_serves_production(tmp_path):
    secret = tmp_path / "secret_key"
    secret.write_text("k" * 60 + "\n")
    shown = show_settings(
        "print(settings.SECRET_KEY)", NEXUS_ENV_FILE="", NEXUS_SECRET_KEY_FILE=str(secret), DJANGO_DEBUG="0"
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == "k" * 60
    # No variable and no file: production refuses to start, naming the variable.
    refused = show_settings(
        "print(settings.SECRET_KEY)", NEXUS_ENV_FILE="", NEXUS_SECRET_KEY_FILE=str(tmp_path / "none"), DJANGO_DEBUG="0"
    )
    assert refused.returncode != 0 and "DJANGO_SECRET_KEY must be set" in refused.stderr
