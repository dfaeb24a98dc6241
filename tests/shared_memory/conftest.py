import pytest


@pytest.fixture
def semantic(settings):
    """Retrieval by meaning on, as in production (the suite's settings turn it off)."""
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000
    return settings
