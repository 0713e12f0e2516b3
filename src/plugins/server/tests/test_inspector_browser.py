"""The web inspector in Debian's headless Chromium (Playwright), against the real server.

`hookagent serve` runs as a subprocess on a free loopback port with the offline demo model,
the demo tools, in-memory session log and inbox, and two users' bearer tokens. Every wait
is on page state (Playwright's auto-waiting `expect`), never a sleep. `.ci/run` installs
/usr/bin/chromium; Playwright never downloads a browser here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hookagent_server
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
TOKENS = {"alice": "tok-alice-9f2c61d0e4b7", "bob": "tok-bob-77ad02c5f19e"}
AGENT = textwrap.dedent(
    """
    from hookagent import AgentConfig
    from hookagent_model_demo import DEMO_TOOLS


    def config():
        return AgentConfig(
            name="inspector-test",
            model="demo",
            tools=DEMO_TOOLS,
            session_log="memory://inspector-browser",
            plugin_options={
                "permissions": {
                    "mode": "default",
                    "rules": [
                        {"tool_name": "slow_count", "behavior": "allow", "source": "policy"}
                    ],
                }
            },
        )
    """
)

pytestmark = pytest.mark.timeout(120)


class Server:
    def __init__(self, base: str, proc: subprocess.Popen[str]) -> None:
        self.base, self.proc = base, proc

    def call(self, method: str, path: str, user: str = "alice", body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {TOKENS[user]}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def run_to_end(self, session: str, text: str, user: str = "alice") -> dict[str, Any]:
        view = self.call("POST", f"/v1/sessions/{session}/runs", user, {"input": text})
        path = f"/v1/sessions/{session}/runs/{view['command_id']}?wait=30"
        done: dict[str, Any] = self.call("GET", path, user)
        assert done["status"] not in ("queued", "starting", "running"), done
        return done


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("inspector")
    (root / "inspector_agent.py").write_text(AGENT)
    tokens = root / "tokens"
    tokens.write_text("".join(f"{user} {token}\n" for user, token in TOKENS.items()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKAGENT_SERVER_TOKENS")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hookagent_cli.main", "serve", "--config",
         "inspector_agent:config", "--inbox", "memory://inspector-browser-inbox",
         "--port", "0", "--tokens-file", str(tokens), "--poll-interval", "0.2",
         "--log-level", "warning"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        base = _listening(proc)
        _ready(base, proc)
        yield Server(base, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _listening(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # the server prints its address once the socket is bound
        seen.append(line)
        if "listening on " in line:
            # keep draining its output (a full pipe would block the server), for the report
            threading.Thread(target=seen.extend, args=(proc.stdout,), daemon=True).start()
            return line.split("listening on ", 1)[1].strip()
    raise AssertionError("hookagent serve exited before listening:\n" + "".join(seen))


def _ready(base: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # poll the readiness route: a wait on the server's state
        assert proc.poll() is None, "hookagent serve exited"
        try:
            with urllib.request.urlopen(base + "/readyz", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.05)
    raise AssertionError("hookagent serve never became ready")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install -y chromium"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    context = browser.new_context(base_url=server.base)
    context.set_default_timeout(20_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], errors  # no uncaught exception in the inspector


def sign_in(page: Page, user: str = "alice") -> None:
    page.goto("/")
    page.fill("#token", TOKENS[user])
    page.click("#sign-in")
    expect(page.locator("#whoami")).to_have_text(user)


def open_session(page: Page, session: str) -> None:
    page.fill("#session-id", session)
    page.press("#session-id", "Enter")
    expect(page.locator("#session-title")).to_have_text(session)


def send(page: Page, text: str) -> None:
    page.fill("#input", text)
    page.click("#send")


def test_the_module_never_parses_data_as_html() -> None:
    """The rule the page lives by, kept by a check of its source: no HTML sink at all."""
    root = Path(hookagent_server.__file__).parent / "inspector"
    source = (root / "inspector.js").read_text()
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "createContextualFragment",
        "DOMParser",
        "srcdoc",
    ):
        assert sink not in source, sink
    page = (root / "index.html").read_text()
    assert "default-src 'none'; script-src 'self'" in page
    assert "<script>" not in page and " on" + "click=" not in page  # no inline script


def test_sign_in_lists_only_the_users_sessions(page: Page, server: Server) -> None:
    server.run_to_end("alice-notes", "hello from alice")
    server.run_to_end("bob-secret", "hello from bob", user="bob")

    page.goto("/")
    page.fill("#token", "not-a-token")
    page.click("#sign-in")
    expect(page.locator("#notice")).to_have_text("That token was refused.")
    expect(page.locator("body")).to_have_attribute("data-auth", "signed-out")

    sign_in(page)
    sessions = page.locator("#sessions li")
    expect(sessions.filter(has_text="alice-notes")).to_have_count(1)
    expect(sessions.filter(has_text="bob-secret")).to_have_count(0)

    page.reload()  # the token lives in sessionStorage: still signed in
    expect(page.locator("#whoami")).to_have_text("alice")
    page.click("#sessions li >> text=alice-notes")
    messages = page.locator("#conversation .msg")
    expect(messages).to_have_count(2)
    user, assistant = messages.nth(0), messages.nth(1)
    expect(user).to_have_attribute("data-role", "user")
    expect(user).to_contain_text("hello from alice")
    expect(assistant).to_contain_text("[demo model]")
    expect(page.locator("#runs li")).to_have_count(1)
    expect(page.locator("#runs li")).to_have_attribute("data-status", "completed")
    for name in ("tasks_context", "permission_context", "plan_mode_context"):
        expect(page.locator(f"#sections [data-section={name}] summary")).to_be_visible()

    page.click("#sign-out")
    expect(page.locator("body")).to_have_attribute("data-auth", "signed-out")
    assert page.evaluate("sessionStorage.length") == 0


def test_watch_a_run_stream_and_interrupt_it(page: Page) -> None:
    sign_in(page)
    open_session(page, "counting")
    send(page, "Count to 20, slowly.")

    live = page.locator("#live-run")
    expect(live).to_have_attribute("data-status", "running")
    events = page.locator("#live-events li")
    expect(events.first).to_have_attribute("data-event", "SESSION_RUN_STARTED")
    # slow_count takes 8 s: its dispatch is durable before it runs, so it streams first
    dispatched = page.locator("#live-events li[data-event=SESSION_TOOL_DISPATCH]")
    expect(dispatched).to_contain_text("slow_count")
    run_id = live.get_attribute("data-run-id")
    assert run_id and run_id.startswith("cmd-")
    expect(page.locator("#interrupt")).to_be_enabled()
    expect(page.locator("#interrupt")).to_have_attribute("data-run-id", run_id)

    page.click("#interrupt")
    expect(live).to_have_attribute("data-status", "interrupted")
    expect(page.locator("#live-events li").last).to_have_attribute(
        "data-event", "SESSION_TASK_FINAL"
    )
    expect(page.locator("#live-events li[data-event=SESSION_RUN_FINISHED]")).to_have_count(1)
    expect(page.locator("#interrupt")).to_be_disabled()
    result = page.locator("#conversation .tool-result[data-tool=slow_count]")
    expect(result).to_have_attribute("data-state", "interrupted")
    call = page.locator("#conversation .tool-call[data-tool=slow_count] pre")
    assert json.loads(call.inner_text()) == {"n": 20}
    command = run_id.rsplit(".", 1)[0]
    runs = page.locator("#runs li")  # newest first: the interrupt command, then the run
    expect(runs).to_have_count(2)
    expect(runs.nth(0)).to_contain_text("interrupt · completed")
    expect(runs.nth(1)).to_have_attribute("data-command-id", command)
    expect(runs.nth(1)).to_have_attribute("data-status", "interrupted")
    expect(page.locator("#notice")).to_be_hidden()  # a read that failed mid-tool is cleared


def test_answer_an_ask_from_the_page(page: Page) -> None:
    sign_in(page)
    open_session(page, "weather")
    live = page.locator("#live-run")
    asks = page.locator("#pending li.ask[data-tool=get_weather]")
    results = page.locator("#conversation .tool-result[data-tool=get_weather]")

    send(page, "What's the weather in Paris?")
    expect(live).to_have_attribute("data-status", "suspended")
    expect(asks.locator(".prompt")).to_contain_text("get_weather")
    assert json.loads(asks.locator("pre").inner_text()) == {"city": "Paris"}
    asks.locator("button.approve").first.click()  # Approve (once)
    expect(live).to_have_attribute("data-status", "completed")
    expect(page.locator("#pending li")).to_have_count(0)
    expect(page.locator("#no-pending")).to_be_visible()
    expect(results).to_have_count(1)
    expect(results).to_have_attribute("data-state", "success")
    expect(results).to_contain_text("Paris:")
    expect(page.locator("#conversation .msg").last).to_contain_text("get_weather says: Paris")

    send(page, "And the weather in Rome?")  # asked again: rejected with a reason
    asks.locator("input").fill("no more weather today")
    asks.locator("button.reject").click()
    expect(live).to_have_attribute("data-status", "completed")
    expect(results).to_have_count(2)
    expect(results.last).to_have_attribute("data-state", "denied")
    expect(results.last).to_contain_text("no more weather today")
    permissions = page.locator("#sections [data-section=permission_context] pre")
    expect(permissions).not_to_contain_text("get_weather")

    send(page, "The weather in Oslo?")  # "Approve always": an allow rule in the section
    asks.locator("button.always").click()
    expect(live).to_have_attribute("data-status", "completed")
    expect(results).to_have_count(3)
    expect(results.last).to_have_attribute("data-state", "success")
    expect(permissions).to_contain_text('"tool_name": "get_weather"')
    rules = json.loads(permissions.inner_text())["allow_rules"]["get_weather"]
    assert [(r["tool_name"], r["behavior"]) for r in rules] == [("get_weather", "allow")]

    send(page, "Weather in Lima?")  # no question any more
    expect(results).to_have_count(4)
    expect(results.last).to_contain_text("Lima:")
    expect(live).to_have_attribute("data-status", "completed")
    expect(page.locator("#pending li")).to_have_count(0)
    expect(page.locator("#notice")).to_be_hidden()


def test_text_from_the_api_is_never_html(page: Page) -> None:
    hostile = '<img src=x onerror="window.__owned=1"><script>window.__owned=2</script><b>b</b>'
    sign_in(page)
    open_session(page, "hostile")
    send(page, hostile)
    expect(page.locator("#live-run")).to_have_attribute("data-status", "completed")
    user = page.locator("#conversation .msg[data-role=user] .text").first
    expect(user).to_have_text(hostile)
    expect(page.locator("#conversation .msg[data-role=assistant]")).to_contain_text("<img src=x")
    assert page.locator("#conversation img, #conversation script, #conversation b").count() == 0
    assert page.evaluate("window.__owned") is None
