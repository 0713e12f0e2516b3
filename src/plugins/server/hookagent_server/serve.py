"""``hookagent serve``: the server under uvicorn (needs hookagent-cli).

The agent comes from ``--config MODULE:ATTR`` (an ``AgentConfig``, or a callable returning
one) or from the CLI's shared options (``--model``, ``--session-log``, ``--plugin``, ...);
``--inbox`` names the inbox log every replica shares. The socket is bound before the app
starts and its address printed (``--port 0`` picks a free port).
"""

from __future__ import annotations

import argparse
import importlib
import os
import socket
import sys
from typing import Any

import attrs
from hookagent import AgentConfig
from hookagent.errors import ConfigurationError

from .bearer import BearerTokens, read_tokens_file


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--inbox",
        default=os.environ.get("HOOKAGENT_INBOX") or None,
        metavar="URL",
        help="the inbox log shared by every replica (default: $HOOKAGENT_INBOX)",
    )
    parser.add_argument(
        "--config", metavar="MODULE:ATTR", help="an AgentConfig (or a callable returning one)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    parser.add_argument("--port", type=int, default=8321, help="port (default 8321; 0: any)")
    parser.add_argument("--replica-id", default=None, help="this replica's id (default: random)")
    parser.add_argument(
        "--tokens-file", metavar="FILE", help="bearer tokens, one 'user token' a line"
    )
    parser.add_argument("--poll-interval", type=float, default=1.0, metavar="SECONDS")
    parser.add_argument("--owner-lease", type=float, default=15.0, metavar="SECONDS")
    parser.add_argument(
        "--proxy-headers",
        action="store_true",
        help="trust X-Forwarded-For/-Proto from --forwarded-allow-ips (behind a proxy)",
    )
    parser.add_argument("--forwarded-allow-ips", default="127.0.0.1")
    parser.add_argument("--root-path", default="", help="the path prefix a proxy serves us under")
    parser.add_argument("--log-level", default="info")


def load_config(spec: str) -> AgentConfig:
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ConfigurationError(f"--config expects MODULE:ATTR, got {spec!r}")
    sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module)
    finally:
        sys.path.pop(0)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if callable(obj) and not isinstance(obj, AgentConfig):
        obj = obj()
    if not isinstance(obj, AgentConfig):
        raise ConfigurationError(f"--config {spec}: not an AgentConfig ({type(obj).__name__})")
    return obj


def build(args: argparse.Namespace) -> tuple[AgentConfig, BearerTokens | None]:
    tokens = BearerTokens(read_tokens_file(args.tokens_file)) if args.tokens_file else None
    tokens = tokens or BearerTokens.from_env()
    extra = [tokens] if tokens is not None else []
    if args.config:
        config = load_config(args.config)
        if extra:
            config = attrs.evolve(config, plugins=[*config.plugins, *extra])
        return config, tokens
    from hookagent_cli.options import build_config

    if getattr(args, "session_log", None) is None:
        raise ConfigurationError("hookagent serve needs --session-log URL (or --config)")
    return build_config(args, plugins=extra, name="hookagent-server", session_gate=None), tokens


def run(args: argparse.Namespace) -> int:
    import anyio
    import uvicorn
    from hookagent_session import SessionHost

    from .app import create_app

    if not args.inbox:
        raise ConfigurationError("hookagent serve needs --inbox URL (or $HOOKAGENT_INBOX)")
    config, tokens = build(args)
    host = SessionHost(
        config,
        inbox=args.inbox,
        replica_id=args.replica_id,
        users=tokens.users if tokens is not None else (),
        poll_interval=args.poll_interval,
        owner_lease=args.owner_lease,
    )
    app = create_app(host)
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(2048)
    bound = sock.getsockname()
    where = f"[{bound[0]}]" if family == socket.AF_INET6 else bound[0]
    print(f"hookagent serve: listening on http://{where}:{bound[1]}", flush=True)
    if tokens is None:
        print(
            "hookagent serve: no authentication plugin answered yet: /v1 is 401 until one does",
            file=sys.stderr,
            flush=True,
        )
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level=args.log_level,
            proxy_headers=args.proxy_headers,
            forwarded_allow_ips=args.forwarded_allow_ips,
            root_path=args.root_path,
            timeout_graceful_shutdown=int(config.shutdown_timeout) + 5,
            lifespan="on",
        )
    )
    anyio.run(lambda: server.serve(sockets=[sock]))
    return 0
