"""``hookagent run|chat --server URL``: the CLI continues the sessions the server (and the
web inspector) holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from server_support import TOKENS, auth, serving

A = auth("alice")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving() as (base, _):
        yield base


def cli(url: str, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOOKAGENT_SERVER_TOKEN": TOKENS["alice"]}
    cmd = [sys.executable, "-c", "from hookagent_cli.main import main; raise SystemExit(main())"]
    return subprocess.run(
        [*cmd, argv[0], "--server", url, *argv[1:]],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_run_through_the_server_continues_the_session_the_api_sees(url: str) -> None:
    one = cli(url, "run", "--session", "shared", "hello from the cli")
    assert one.returncode == 0, one.stderr
    assert one.stdout.strip() == "echo: hello from the cli"
    with httpx.Client(base_url=url) as client:  # the web's side: the same session
        r = client.post("/v1/sessions/shared/runs", json={"input": "and from the web"}, headers=A)
        client.get(
            f"/v1/sessions/shared/runs/{r.json()['command_id']}", params={"wait": 20}, headers=A
        )
    two = cli(url, "run", "--session", "shared", "--json", "again")
    assert two.returncode == 0, two.stderr
    doc = json.loads(two.stdout)
    assert doc["reply"] == "echo: again" and doc["status"] == "completed"
    with httpx.Client(base_url=url) as client:
        summary = client.get("/v1/sessions/shared", headers=A).json()
    assert summary["messages"] == 6


def test_a_question_is_answered_with_approve_through_the_server(url: str) -> None:
    asked = cli(url, "run", "--session", "ask-cli", "deploy prod")
    assert asked.returncode == 3, asked.stderr
    assert "waiting: deploy(env='prod')" in asked.stdout
    rid = asked.stdout.split("--approve ", 1)[1].split()[0]
    done = cli(url, "run", "--session", "ask-cli", "--approve", rid)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"


def test_chat_through_the_server(url: str) -> None:
    got = cli(url, "chat", "--session", "chatty", stdin="first\nsecond\n/exit\n")
    assert got.returncode == 0, got.stderr
    assert "agent> echo: first" in got.stdout and "agent> echo: second" in got.stdout
    with httpx.Client(base_url=url) as client:
        assert client.get("/v1/sessions/chatty", headers=A).json()["messages"] == 4


def test_errors_through_the_server_are_one_line(url: str) -> None:
    env_less: Any = cli(url, "run", "--session", "x", "--user", "bob", "hi")
    assert env_less.returncode == 1
    assert "--user is not used with --server" in env_less.stderr
    bad = subprocess.run(
        [sys.executable, "-c", "from hookagent_cli.main import main; raise SystemExit(main())",
         "run", "--server", url, "--token", "wrong-token-0000000000", "hi"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 1
    assert "hookagent: error: ServerError: 401 Unauthenticated" in bad.stderr
