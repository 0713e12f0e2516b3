"""One ``test_hook_<name>`` per hook: each hook is emitted where and how its spec says."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import pluggy
import pytest
from hookagent import (
    Agent,
    AgentConfig,
    AgentState,
    ConfigurationError,
    HookContractError,
    InMemoryAgentStateStore,
    Middleware,
    ModelRequest,
    ModelResponse,
    Msg,
    RunEvent,
    RuntimeContext,
    StoreConfigurationError,
    ToolCall,
    ToolResultBlock,
    Workspace,
    hookimpl,
    hookspec,
)
from hookagent import hookspecs as specs
from hookagent.testing import HookRecorder, ScriptedModel, tool_call
from hookagent.tools import error_result

pytestmark = pytest.mark.anyio


async def lookup(key: int) -> str:
    """Look a key up."""
    return f"v{key}"


def config(*plugins: object, **kw: Any) -> AgentConfig:
    kw.setdefault("model", ScriptedModel([tool_call("lookup", key=1), "done"]))
    kw.setdefault("state_store", InMemoryAgentStateStore())
    kw.setdefault("tools", [lookup])
    return AgentConfig(plugins=list(plugins), autoload_plugins=False, **kw)


async def call(cfg: AgentConfig, text: str = "hi") -> Msg:
    return await cfg.build().call(text, RuntimeContext(user_id="u", session_id="s"))


class ExtraSpecs:
    @staticmethod
    @hookspec
    def hookagent_extra_thing(value: int) -> Any:
        """A plugin's own hook."""


async def test_hook_hookagent_add_hookspecs() -> None:
    class Adds:
        @hookimpl
        def hookagent_add_hookspecs(self, pluginmanager: pluggy.PluginManager) -> None:
            pluginmanager.add_hookspecs(ExtraSpecs)

    class Implements:
        @hookimpl
        def hookagent_extra_thing(self, value: int) -> int:
            return value * 2

    cfg = config(Adds(), Implements())
    assert cfg.kernel.pm.hook.hookagent_extra_thing(value=21) == [42]


async def test_hook_hookagent_register_tools() -> None:
    class Tools:
        @hookimpl
        def hookagent_register_tools(self, register: Any) -> None:
            register(lookup, name="plugin_lookup", description="Plugin lookup.", group="g")

    cfg = config(Tools(), tool_groups=["g"])
    tool = cfg.kernel.tools["plugin_lookup"]
    assert (tool.description, tool.group) == ("Plugin lookup.", "g")
    assert tool.parameters["properties"] == {"key": {"type": "integer"}}

    class Bad:
        @hookimpl
        def hookagent_register_tools(self, register: Any) -> None:
            register(lambda *a: None, name="bad")

    with pytest.raises(Exception, match=r"\*args"):
        config(Bad()).build()


async def test_hook_hookagent_register_models() -> None:
    made: list[dict[str, Any]] = []

    class Models:
        @hookimpl
        def hookagent_register_models(self, register: Any) -> None:
            register("scripted", lambda **opts: made.append(opts) or ScriptedModel(["from plugin"]))

    cfg = config(Models(), model="scripted", model_options={"temperature": 0})
    assert (await call(cfg)).text == "from plugin" and made == [{"temperature": 0}]
    with pytest.raises(Exception, match="no model provider named 'other'; registered: scripted"):
        config(Models(), model="other").build()

    class NotCallable:
        @hookimpl
        def hookagent_register_models(self, register: Any) -> None:
            register("x", "not a factory")

    with pytest.raises(HookContractError, match="expected a callable factory"):
        config(NotCallable(), model="x").build()


async def test_hook_hookagent_register_state_stores() -> None:
    stores: list[str] = []

    class Stores:
        @hookimpl
        def hookagent_register_state_stores(self, register: Any) -> None:
            async def open_store(url: str, **options: Any) -> InMemoryAgentStateStore:
                stores.append(url)
                return InMemoryAgentStateStore()

            register("async-mem", open_store)

    cfg = config(Stores(), state_store="async-mem://x", model=ScriptedModel(default="done"))
    await call(cfg)
    await call(cfg)
    assert stores == ["async-mem://x"]

    class Twice:
        @hookimpl
        def hookagent_register_state_stores(self, register: Any) -> None:
            register("async-mem", lambda url: InMemoryAgentStateStore())

    with pytest.raises(HookContractError, match="registered twice"):
        config(Stores(), Twice(), state_store="async-mem://x").build()


async def test_hook_hookagent_register_session_logs() -> None:
    from hookagent.sessionlog import InMemorySessionLog, open_session_log, session_log_registration

    class Logs:
        @hookimpl
        def hookagent_register_session_logs(self, register: Any) -> None:
            async def opening(url: str, **options: Any) -> InMemorySessionLog:
                return InMemorySessionLog()

            register("mem-log", opening, locality="process")

    pm = config(Logs()).kernel.pm
    assert session_log_registration(pm, "mem-log://x")[2] == "process"
    log = await open_session_log("mem-log://x", plugin_manager=pm)
    assert (await log.head("u", "s")).seq == 0
    with pytest.raises(StoreConfigurationError, match="registered: mem-log"):
        await open_session_log("nope://x", plugin_manager=pm)


async def test_hook_hookagent_state_authority() -> None:
    """A configuration with a session_log loads and saves through the plugin's store only."""
    authority = InMemoryAgentStateStore()
    asked: list[object] = []

    class Authority:
        @hookimpl
        def hookagent_state_authority(self, config: AgentConfig, kernel: Any) -> Any:
            asked.append(config.session_log)
            return authority

    ignored = InMemoryAgentStateStore()
    cfg = config(
        Authority(), state_store=ignored, session_log="x://y", model=ScriptedModel(default="ok")
    )
    assert (await call(cfg)).text == "ok"
    assert asked == ["x://y"] and cfg.kernel.store_locality == "process"
    assert (await authority.get_versioned("u", "s")).version == 1
    assert (await ignored.get_versioned("u", "s")).version == 0
    with pytest.raises(ConfigurationError, match="needs the session-log plugin"):
        config(session_log="x://y").build()


async def test_hook_hookagent_configure() -> None:
    seen: list[tuple[object, str, str]] = []

    class Checks:
        @hookimpl
        def hookagent_configure(self, config: AgentConfig, kernel: Any) -> None:
            options = config.plugin_options.get("checks", {})
            seen.append((kernel.model, kernel.store_locality, options.get("level", "")))
            if options.get("level") == "bad":
                raise ConfigurationError("checks: level 'bad' is not a level")

    cfg = config(
        Checks(), plugin_options={"checks": {"level": "ok"}}, model=ScriptedModel(default="done")
    )
    assert (await call(cfg)).text == "done"
    await call(cfg)  # once per configuration, not per call
    assert seen == [(cfg.kernel.model, "process", "ok")]
    with pytest.raises(ConfigurationError, match="level 'bad'"):
        config(Checks(), plugin_options={"checks": {"level": "bad"}}).build()

    class Opening:  # a refused configuration never opens its store
        opened: list[str] = []

        @hookimpl
        def hookagent_register_state_stores(self, register: Any) -> None:
            async def open_store(url: str) -> InMemoryAgentStateStore:
                Opening.opened.append(url)
                return InMemoryAgentStateStore()

            register("opening", open_store, locality="host")

    bad = config(
        Checks(), Opening(), state_store="opening://x", plugin_options={"checks": {"level": "bad"}}
    )
    with pytest.raises(ConfigurationError):
        bad.build()
    good = config(
        Checks(), Opening(), state_store="opening://y", model=ScriptedModel(default="done")
    )
    await call(good)
    assert Opening.opened == ["opening://y"] and seen[-1][1] == "host"


async def test_hook_hookagent_token_counter() -> None:
    texts: list[str] = []

    class Words:
        @hookimpl
        def hookagent_token_counter(self) -> Any:
            def count(text: str) -> int:
                texts.append(text)
                return len(text.split())

            return count

    kernel = config(Words()).kernel
    msgs = [Msg.user("one two three"), Msg.assistant("four")]
    assert kernel.count_tokens(msgs) == 3 + 1 + 2 * 4  # words + 4 per message
    assert kernel.count_tokens(msgs, system="be brief") == 2 + 4 + 3 + 1 + 2 * 4
    assert texts[:2] == ["one two three", "four"]
    plain = config().kernel  # no plugin: chars / 4, rounded up
    assert plain.count_tokens([Msg.user("abcde")]) == 2 + 4

    class NotCallable:
        @hookimpl
        def hookagent_token_counter(self) -> Any:
            return 7

    with pytest.raises(HookContractError, match="not a callable"):
        config(NotCallable()).build()


async def test_hook_hookagent_workspace() -> None:
    class Files:
        url, shared = "memory://ws", False

        def __init__(self, root: str) -> None:
            self.root, self.files = root, {}

        async def read_text(self, path: str) -> str:
            return self.files[path]

        async def write_text(self, path: str, text: str) -> None:
            self.files[path] = text

        async def append_text(self, path: str, text: str) -> None:
            self.files[path] = self.files.get(path, "") + text

        async def exists(self, path: str) -> bool:
            return path in self.files

        async def list(self, path: str = "") -> list[str]:
            return sorted(self.files)

        async def remove(self, path: str) -> None:
            del self.files[path]

        async def size(self, path: str) -> int:
            return len(self.files[path])

    roots: dict[str, Files] = {}

    class Provider:
        @hookimpl
        def hookagent_workspace(self, ctx: RuntimeContext) -> Files:
            return roots.setdefault(ctx.user_id, Files(ctx.user_id))

    async def note(text: str, ctx: RuntimeContext) -> str:
        """Write a note."""
        ws = ctx.get(Agent).kernel.workspace(ctx)  # type: ignore[union-attr]
        await ws.append_text("notes.md", text)
        return "noted"

    model = ScriptedModel([tool_call("note", text="a"), "done"])
    cfg = config(Provider(), tools=[note], model=model)
    await call(cfg)
    assert roots["u"].files == {"notes.md": "a"}
    assert isinstance(roots["u"], Workspace)
    assert config().kernel.workspace(RuntimeContext(user_id="u", session_id="s")) is None


def test_hook_hookagent_workspace_is_given_the_asking_kernel() -> None:
    """A provider configured per configuration tells them apart, also outside a call."""
    seen: list[tuple[str, object]] = []

    class PerConfig:
        @hookimpl
        def hookagent_workspace(self, ctx: RuntimeContext, kernel: Any) -> None:
            seen.append((ctx.user_id, kernel))

    provider = PerConfig()
    one, two = config(provider), config(provider)
    one.kernel.workspace(RuntimeContext(user_id="a", session_id="s"))
    two.kernel.workspace(RuntimeContext(user_id="b", session_id="s"))
    assert seen == [("a", one.kernel), ("b", two.kernel)]


async def test_hook_hookagent_default_state_store() -> None:
    default = InMemoryAgentStateStore()

    class First:
        @hookimpl
        def hookagent_default_state_store(self, agent_id: str) -> Any:
            return default

    class Second:
        @hookimpl(trylast=True)
        def hookagent_default_state_store(self, agent_id: str) -> Any:
            raise AssertionError("not reached: the first non-None result wins")

    cfg = AgentConfig(plugins=[Second(), First()], autoload_plugins=False)
    assert await cfg.build().kernel.store() is default


async def test_hook_hookagent_state_loaded() -> None:
    seen: list[tuple[str, int]] = []

    class Loaded:
        @hookimpl
        async def hookagent_state_loaded(self, state: AgentState, ctx: RuntimeContext) -> None:
            await anyio.sleep(0)
            assert ctx.agent_state is state
            seen.append((state.session_id, len(state.context)))
            state.summary = "set by a plugin"

    cfg = config(Loaded())
    await call(cfg)
    assert seen == [("s", 0)]
    assert (await cfg.build().get_agent_state("u", "s")).summary == "set by a plugin"

    class Refuses:
        @hookimpl
        def hookagent_state_loaded(self, state: AgentState) -> None:
            raise PermissionError("validation refused the state")

    with pytest.raises(PermissionError):
        await call(config(Refuses()))


async def test_hook_hookagent_before_persist() -> None:
    outcomes: list[str] = []

    class Before:
        @hookimpl
        def hookagent_before_persist(self, state: AgentState, outcome: str) -> None:
            outcomes.append(outcome)
            state.extensions["audit"] = {"outcome": outcome}

    cfg = config(Before())
    await call(cfg)
    agent = cfg.build()
    await agent.clear_context("u", "s")
    assert outcomes == ["success", "admin"]
    assert (await agent.get_agent_state("u", "s")).extensions["audit"] == {"outcome": "admin"}


async def test_hook_hookagent_after_persist() -> None:
    versions: list[int] = []

    class After:
        @hookimpl
        async def hookagent_after_persist(
            self, state: AgentState, ctx: RuntimeContext, version: int
        ) -> None:
            versions.append(version)

    cfg = config(After(), model=ScriptedModel(["a", "b"]))
    await call(cfg)
    await call(cfg)
    assert versions == [1, 2]


async def test_hook_hookagent_build_model_request() -> None:
    order: list[str] = []

    class AddsView:
        @hookimpl
        async def hookagent_build_model_request(
            self, request: ModelRequest, ctx: RuntimeContext
        ) -> None:
            order.append("async")
            request.messages.insert(0, Msg.system("TASK_STATE: nothing pending"))

    class SetsSystem:
        @hookimpl(tryfirst=True)
        def hookagent_build_model_request(self, request: ModelRequest) -> None:
            order.append("sync")
            request.system = "be brief"

    model = ScriptedModel(["done"])
    cfg = config(AddsView(), SetsSystem(), model=model)
    await call(cfg)
    sent = model.requests[0]
    assert sent.system == "be brief" and sent.messages[0].text == "TASK_STATE: nothing pending"
    assert order == ["sync", "async"]
    state = await cfg.build().get_agent_state("u", "s")
    assert all("TASK_STATE" not in m.text for m in state.context)  # transient, never durable

    class ReturnsSomething:
        @hookimpl
        def hookagent_build_model_request(self, request: ModelRequest) -> Any:
            return request

    with pytest.raises(HookContractError, match="hookagent_build_model_request"):
        await call(config(ReturnsSomething(), model=ScriptedModel(["x"])))


async def test_hook_hookagent_wrap_tool_call() -> None:
    trail: list[str] = []

    async def outer(call_: ToolCall, ctx: RuntimeContext, call_next: Any) -> ToolResultBlock:
        trail.append("outer-in")
        result = await call_next(call_)
        trail.append("outer-out")
        return result

    async def deny_key_2(call_: ToolCall, ctx: RuntimeContext, call_next: Any) -> ToolResultBlock:
        trail.append(f"deny-check:{call_.use.input['key']}")
        if call_.use.input["key"] == 2:
            return error_result(call_.use, "denied by policy", "denied")
        return await call_next(call_)

    class Outer:
        @hookimpl
        def hookagent_wrap_tool_call(self) -> Any:
            return Middleware(outer, order=-10)  # declared outer, whatever the registration

    class Deny:
        @hookimpl(tryfirst=True)
        def hookagent_wrap_tool_call(self) -> Any:
            return deny_key_2

    model = ScriptedModel([tool_call("lookup", key=1), tool_call("lookup", key=2), "done"])
    recorder_events: list[str] = []

    class Events:
        @hookimpl
        def hookagent_on_run_event(self, event: RunEvent) -> None:
            recorder_events.append(event.kind)

    for plugins in ((Outer(), Deny(), Events()), (Deny(), Outer(), Events())):
        trail.clear()
        recorder_events.clear()
        model = ScriptedModel([tool_call("lookup", key=1), tool_call("lookup", key=2), "done"])
        reply = await call(config(*plugins, model=model))
        assert trail == [
            "outer-in",
            "deny-check:1",
            "outer-out",
            "outer-in",
            "deny-check:2",
            "outer-out",
        ]
        # the only call of the second step was denied: the turn stops, the model is not asked
        assert reply.metadata["generate_reason"] == "ALL_TOOLS_DENIED"
        assert len(model.requests) == 2
        assert "tool_denied" in recorder_events


async def test_hook_hookagent_wrap_model_call() -> None:
    """Model middlewares compose by declared order; each sees the request and the response."""
    trail: list[str] = []

    def named(tag: str) -> Any:
        async def middleware(request: ModelRequest, ctx: RuntimeContext, call_next: Any) -> Any:
            trail.append(f"{tag}-in")
            response = await call_next(request)
            trail.append(f"{tag}-out")
            return response

        return middleware

    class Inner:
        @hookimpl
        def hookagent_wrap_model_call(self) -> Any:
            return Middleware(named("inner"), order=5)

    class Outer:
        @hookimpl
        def hookagent_wrap_model_call(self) -> Any:
            return Middleware(named("outer"), order=-5)

    class Cache:
        """Answers without calling the provider at all."""

        @hookimpl
        def hookagent_wrap_model_call(self) -> Any:
            async def cached(request: ModelRequest, ctx: RuntimeContext, call_next: Any) -> Any:
                if request.messages[-1].text == "cached?":
                    return ModelResponse(Msg.assistant("from cache"))
                return await call_next(request)

            return Middleware(cached, order=10)

    model = ScriptedModel(["from the model"])
    reply = await call(config(Inner(), Outer(), Cache(), model=model))
    assert reply.text == "from the model"
    assert trail == ["outer-in", "inner-in", "inner-out", "outer-out"]
    trail.clear()
    cfg = config(Cache(), Outer(), model=ScriptedModel([]))
    async with cfg.build() as agent:
        reply = await agent.call("cached?", RuntimeContext(user_id="u", session_id="c"))
    assert reply.text == "from cache" and trail == ["outer-in", "outer-out"]


async def test_hook_hookagent_on_run_event() -> None:
    events: list[RunEvent] = []

    class Observer:
        @hookimpl
        async def hookagent_on_run_event(self, event: RunEvent) -> None:
            events.append(event)

    class Broken:
        @hookimpl
        def hookagent_on_run_event(self, event: RunEvent) -> None:
            raise RuntimeError("observers never break a run")

    ctx = RuntimeContext(user_id="u", session_id="s")
    reply = await config(Observer(), Broken()).build().call("hi", ctx)
    assert reply.text == "done"
    assert [e.kind for e in events] == [
        "run_started",
        "state_loaded",
        "model_requested",
        "model_responded",
        "tool_called",
        "tool_returned",
        "model_requested",
        "model_responded",
        "state_persisted",
        "run_finished",
    ]
    assert {(e.agent_id, e.user_id, e.session_id, e.run_id) for e in events} == {
        ("agent", "u", "s", ctx.run_id)
    }


def test_every_hook_has_a_test_here() -> None:
    hooks = sorted(
        n for n, _ in inspect.getmembers(specs, inspect.isfunction) if n.startswith("hookagent_")
    )
    tests = {n for n in globals() if n.startswith("test_hook_")}
    assert hooks and [h for h in hooks if f"test_hook_{h}" not in tests] == []


def test_hook_recorder_sees_calls() -> None:
    cfg = config()
    recorder = HookRecorder(cfg.kernel.pm)
    cfg.build().call_sync("hi", RuntimeContext(user_id="u", session_id="s"))
    recorder.close()
    names = recorder.names()
    assert "hookagent_state_loaded" in names and "hookagent_after_persist" in names
    assert recorder.named("hookagent_before_persist")[0].kwargs["outcome"] == "success"
    cfg.kernel.close_portal()


async def test_a_cancelled_store_opening_is_retried_by_the_next_caller() -> None:
    """A caller that gives up while the store opens (its timeout) must not leave the
    configuration without a store: the factory is asked for a new opening."""
    opened: list[int] = []

    class Slow:
        @hookimpl
        def hookagent_register_state_stores(self, register: Any) -> None:
            async def open_store(url: str, **options: Any) -> InMemoryAgentStateStore:
                opened.append(len(opened))
                if len(opened) == 1:
                    await anyio.sleep(30)  # the database does not answer the first time
                return InMemoryAgentStateStore()

            register("slow-mem", open_store)

    cfg = config(Slow(), state_store="slow-mem://x", model=ScriptedModel(default="done"))
    with anyio.move_on_after(0.2) as scope:
        await cfg.kernel.store()
    assert scope.cancelled_caught
    store = await cfg.kernel.store()
    assert isinstance(store, InMemoryAgentStateStore) and opened == [0, 1]
    assert await cfg.kernel.store() is store
    await call(cfg)
