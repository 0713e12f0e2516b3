"""Plugin discovery and ``hookagent --help`` import no heavy dependency; using a feature still
works (docs/plugins.md, "Keep the entry module light").

Discovery imports every installed plugin's entry module in every process that builds an
agent or runs ``hookagent``; a module that imports FastAPI, SQLAlchemy or redis-py at its top
makes every one of those processes pay for them. Each check runs in a fresh interpreter,
since this one has imported everything already, and asserts what was imported, never a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "fastapi",
    "starlette",
    "pydantic",
    "uvicorn",
    "sqlalchemy",
    "asyncpg",
    "aiosqlite",
    "aiomysql",
    "redis",
    "opentelemetry",
    "fsspec",
    "jinja2",
    "httpx",
    "openai",
)
# the plugins whose entry modules used to import those (so the check is not vacuous)
PLUGINS = ("server", "store-sql", "store-redis", "store-jsonfile", "otel", "workspace")

DISCOVER = """
import json, sys
from hookagent_cli.main import build_parser, collect_commands
from hookagent_cli.pm import cli_plugin_manager
from hookagent.plugins import create_plugin_manager

pm = cli_plugin_manager(strict=True)  # what `hookagent` does before parsing
build_parser(collect_commands(pm), "")
agent_pm = create_plugin_manager(strict=True)  # what building an agent does
loaded = [name for name, _ in agent_pm.list_name_plugin()]
print(json.dumps({"modules": sorted(sys.modules), "loaded": loaded}))
"""

HELP = """
import contextlib, io, json, sys
from hookagent_cli.main import main

out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:  # --help
        code = exc.code
print(json.dumps({"modules": sorted(sys.modules), "code": code, "out": out.getvalue()}))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD", "HOOKAGENT_BLOCKED_PLUGINS"):
        env.pop(name, None)
    return env


def _python(code: str, *args: str, cwd: Path | None = None, **env: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**_env(), **env},
        cwd=cwd,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def _heavy(modules: object) -> list[str]:
    assert isinstance(modules, list)
    return sorted({m.split(".")[0] for m in modules} & set(HEAVY))


def test_plugin_discovery_imports_no_heavy_dependency() -> None:
    result = _python(DISCOVER)
    loaded = result["loaded"]
    assert isinstance(loaded, list)
    assert set(PLUGINS) <= set(loaded), loaded
    assert _heavy(result["modules"]) == []


def test_hookagent_help_imports_no_heavy_dependency_and_no_command_module() -> None:
    result = _python(HELP, "--help")
    assert result["code"] == 0
    out = result["out"]
    assert isinstance(out, str) and "serve" in out and "sessions" in out
    assert _heavy(result["modules"]) == []
    modules = result["modules"]
    assert isinstance(modules, list)
    # a command's implementation is imported when it runs, not to list it
    for module in ("hookagent_cli.sessions", "hookagent_server.serve", "hookagent_tasks.cli"):
        assert module not in modules


def test_a_run_on_the_default_store_imports_no_other_store_or_server(tmp_path: Path) -> None:
    # the CLI asks whether the store is a Redis one: by the module a Redis store loads, not
    # by reading the package's (lazy) class, which would import redis-py for nothing
    home = str(tmp_path / "state")
    args = ("run", "--model", "demo", "--session", "startup", "hi")
    result = _python(HELP, *args, cwd=tmp_path, HOOKAGENT_STATE_HOME=home)
    assert result["code"] == 0
    assert result["out"]
    heavy = set(_heavy(result["modules"]))
    assert heavy.isdisjoint({"fastapi", "sqlalchemy", "redis", "asyncpg", "aiosqlite"}), heavy


def test_serve_help_configures_serve_without_fastapi() -> None:
    result = _python(HELP, "serve", "--help")
    assert result["code"] == 0
    out = result["out"]
    assert isinstance(out, str) and "--inbox" in out and "--store" in out
    assert "hookagent_server.serve" in result["modules"]  # type: ignore[operator]
    assert "fastapi" not in result["modules"]  # type: ignore[operator]


USE = """
import json, sys
import anyio
from hookagent import AgentConfig, RuntimeContext
from hookagent_model_demo import DemoModel

async def main(url):
    config = AgentConfig(model=DemoModel(), state_store=url)
    async with config.build() as agent:
        reply = await agent.call("hello", RuntimeContext(user_id="u", session_id="s"))
    store = await config.kernel.store()
    await config.aclose()
    return type(store).__module__, reply.text

module, text = anyio.run(main, sys.argv[1])
import hookagent_server, hookagent_store_sql, hookagent_store_redis, hookagent_otel
names = {
    "sql": hookagent_store_sql.SQLAgentStateStore.__module__,
    "tables": hookagent_store_sql.TableNames().prefix,
    "redis": hookagent_store_redis.RedisAgentStateStore.__module__,
    "app": hookagent_server.create_app.__module__,
    "otel": hookagent_otel.OtelPlugin.__module__,
    "dir": "SqlSessionLog" in dir(hookagent_store_sql),
}
print(json.dumps({"modules": sorted(sys.modules), "store": module, "text": text, **names}))
"""


def test_a_sql_store_url_still_works_and_public_names_import(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'startup.db'}"
    result = _python(USE, url, cwd=tmp_path)
    assert result["store"] == "hookagent_store_sql.store"
    assert result["text"]
    assert "sqlalchemy" in result["modules"]  # type: ignore[operator]
    assert "aiosqlite" in result["modules"]  # type: ignore[operator]
    assert result["sql"] == "hookagent_store_sql.store"
    assert result["tables"] == "hookagent_"
    assert result["redis"] == "hookagent_store_redis.store"
    assert result["app"] == "hookagent_server.app"
    assert result["otel"] == "hookagent_otel.plugin"
    assert result["dir"] is True


@pytest.mark.parametrize("package", ["hookagent_store_sql", "hookagent_server"])
def test_an_unknown_name_is_still_an_attribute_error(package: str) -> None:
    module = __import__(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
