"""Registration through the entry point, and option/environment resolution."""

import importlib.metadata as md

import pytest
from hookagent.plugins import create_plugin_manager
from hookagent.registry import collect
from hookagent_model_openai import ModelConfigurationError, OpenAIChatModel, plugin
from hookagent_model_openai.config import DEFAULT_BASE_URL, OpenAISettings


def test_entry_point_is_declared():
    eps = [ep for ep in md.entry_points(group="hookagent") if ep.name == "model-openai"]
    assert len(eps) == 1
    assert eps[0].value == "hookagent_model_openai.plugin"
    assert eps[0].dist is not None and eps[0].dist.name == "hookagent-model-openai"
    assert eps[0].load() is plugin


def test_autoloaded_plugin_registers_the_openai_factory():
    pm = create_plugin_manager(autoload=True, blocked=[])
    factories = collect(pm, "hookagent_register_models", "model")
    factory, owner = factories["openai"]
    assert factory is plugin.create_model and owner == "model-openai"


def test_factory_builds_a_provider():
    model = plugin.create_model(model="llama3.2", base_url="http://127.0.0.1:11434/v1/")
    assert isinstance(model, OpenAIChatModel)
    assert model.name == "openai:llama3.2"
    assert model.settings.base_url == "http://127.0.0.1:11434/v1"
    assert model.settings.api_key == "not-needed"


def test_environment_defaults(monkeypatch):
    monkeypatch.setenv("OPENAI_MODEL", "from-openai-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("HOOKAGENT_OPENAI_TIMEOUT", "12.5")
    monkeypatch.setenv("HOOKAGENT_OPENAI_MAX_RETRIES", "5")
    s = OpenAISettings.from_options()
    assert (s.model, s.base_url, s.api_key, s.timeout, s.max_retries) == (
        "from-openai-env",
        "http://127.0.0.1:8000/v1",
        "sk-env",
        12.5,
        5,
    )
    monkeypatch.setenv("HOOKAGENT_OPENAI_MODEL", "from-hookagent-env")
    assert OpenAISettings.from_options().model == "from-hookagent-env"
    assert OpenAISettings.from_options(model="explicit").model == "explicit"


def test_defaults_and_pass_through_params():
    s = OpenAISettings.from_options(model="m", api_key="k", temperature=0.3, max_tokens=100)
    assert s.base_url == DEFAULT_BASE_URL and s.timeout == 60.0 and s.max_retries == 2
    assert s.params == {"temperature": 0.3, "max_tokens": 100}


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({}, "no model name"),
        ({"model": "  "}, "no model name"),
        ({"model": "m", "base_url": "ftp://x"}, "not an http"),
        ({"model": "m", "base_url": "localhost:11434"}, "not an http"),
        ({"model": "m"}, "needs an API key"),  # the official endpoint without a key
        ({"model": "m", "api_key": "k", "timeout": 0}, "timeout"),
        ({"model": "m", "api_key": "k", "timeout": "soon"}, "timeout"),
        ({"model": "m", "api_key": "k", "max_retries": -1}, "max_retries"),
        ({"model": "m", "api_key": "k", "max_retries": True}, "max_retries"),
        ({"model": "m", "api_key": "k", "backoff_base": float("inf")}, "backoff_base"),
        ({"model": "m", "api_key": "k", "stream_options": {}}, "set by the provider"),
        ({"model": "m", "api_key": "k", "stream": "no"}, "must be True or False"),
        ({"model": "m", "api_key": "k", "temperature": object()}, "JSON"),
        ({"model": "m", "api_key": "k", "default_headers": {"a": 1}}, "default_headers"),
    ],
)
def test_bad_options_are_configuration_errors(options, match):
    with pytest.raises(ModelConfigurationError, match=match):
        plugin.create_model(**options)


def test_bad_environment_value_is_a_configuration_error(monkeypatch):
    monkeypatch.setenv("HOOKAGENT_OPENAI_MAX_RETRIES", "many")
    with pytest.raises(ModelConfigurationError, match="max_retries"):
        OpenAISettings.from_options(model="m", base_url="http://127.0.0.1:1/v1")
