import pytest

PROVIDER_ENV = [
    "HOOKAGENT_OPENAI_MODEL",
    "OPENAI_MODEL",
    "HOOKAGENT_OPENAI_BASE_URL",
    "OPENAI_BASE_URL",
    "HOOKAGENT_OPENAI_API_KEY",
    "OPENAI_API_KEY",
    "HOOKAGENT_OPENAI_TIMEOUT",
    "HOOKAGENT_OPENAI_MAX_RETRIES",
    "HOOKAGENT_OPENAI_STREAM",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def clean_provider_env(monkeypatch):
    """A developer's own OPENAI_* settings must not leak into these tests."""
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
