"""``hookagent plugins``: what is installed, what each plugin implements, what failed and why."""

from __future__ import annotations

import argparse
from typing import Any

from hookagent.registry import collect

from .options import presets
from .render import as_json


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.add_argument("--traceback", action="store_true", help="show the traceback of an error")


SECTIONS_ATTRIBUTE = "HOOKAGENT_SECTIONS"
"""A plugin declares the state sections it owns as this attribute (a tuple of names)."""
_CHAINS = (("hookagent_wrap_tool_call", "tool"), ("hookagent_wrap_model_call", "model"))


def middleware_orders(pm: Any) -> dict[str, list[str]]:
    """plugin name -> ``["tool order 200", ...]``: the orders its middlewares declare."""
    from hookagent.relay import HookRelay

    orders: dict[str, list[str]] = {}
    relay = HookRelay(pm)
    for hook, label in _CHAINS:
        try:
            chain = relay.middleware_chain(hook)
        except Exception as exc:
            orders.setdefault("(error)", []).append(f"{label}: {type(exc).__name__}: {exc}")
            continue
        for order, name, _ in chain:
            orders.setdefault(name, []).append(f"{label} order {order}")
    return orders


def sections_of(plugin: object) -> list[str]:
    """The sections a plugin says it owns (``HOOKAGENT_SECTIONS``); none when it says none."""
    declared = getattr(plugin, SECTIONS_ATTRIBUTE, ())
    if isinstance(declared, str):
        return [declared]
    try:
        return [str(name) for name in declared]
    except TypeError:
        return [f"(not a list: {declared!r})"]


def inventory(pm: Any) -> dict[str, Any]:
    infos = {i.name: i for i in pm.plugin_infos}
    orders = middleware_orders(pm)
    loaded = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        info = infos.get(name)
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or [])
        loaded.append(
            {
                "name": name,
                "distribution": info.distribution if info else None,
                "version": info.version if info else None,
                "object": info.value if info else getattr(plugin, "__name__", repr(plugin)),
                "hooks": hooks,
                "middleware": orders.get(name, []),
                "sections": sections_of(plugin),
            }
        )
    problems = [
        {
            "name": i.name,
            "distribution": i.distribution,
            "version": i.version,
            "object": i.value,
            "status": i.status,
            "reason": i.error,
        }
        for i in pm.plugin_infos
        if i.status != "loaded"
    ]
    registered: dict[str, list[str]] = {}
    for hook, what in (
        ("hookagent_register_models", "models"),
        ("hookagent_register_state_stores", "store schemes"),
    ):
        try:
            registered[what] = sorted(collect(pm, hook, what))
        except Exception as exc:
            registered[what] = [f"(error: {type(exc).__name__}: {exc})"]
    return {"loaded": loaded, "not_loaded": problems, "registered": registered}


def run(args: argparse.Namespace) -> int:
    pm = args.plugin_manager
    data = inventory(pm)
    data["registered"]["cli commands"] = sorted(args.commands)
    try:
        data["registered"]["cli presets"] = sorted(presets(pm))
    except Exception as exc:
        data["registered"]["cli presets"] = [f"(error: {type(exc).__name__}: {exc})"]
    if args.json:
        print(as_json(data))
        return 0
    print(f"loaded plugins ({len(data['loaded'])}):")
    for p in data["loaded"]:
        dist = (
            f"{p['distribution']} {p['version']}" if p["distribution"] else "(not a distribution)"
        )
        print(f"  {p['name']:<18} {dist:<34} {p['object']}")
        print(f"      hooks: {', '.join(p['hooks']) or '(none)'}")
        if p["middleware"]:
            print(f"      middleware: {', '.join(p['middleware'])}")
        if p["sections"]:
            print(f"      sections: {', '.join(p['sections'])}")
    for p in data["not_loaded"]:
        dist = f"{p['distribution']} {p['version']}" if p["distribution"] else "?"
        reason = f": {p['reason']}" if p["reason"] else ""
        print(f"{p['status'].upper()}: {p['name']} ({dist}, {p['object']}){reason}")
    for what, names in data["registered"].items():
        print(f"{what}: {', '.join(names) or '(none)'}")
    return 0
