"""Tools: plain (sync or async) functions with a JSON schema derived from their signature.

A parameter annotated ``RuntimeContext`` receives the call's context and is not shown to the
model. Arguments are checked against the schema before the function runs, so a model that
sends the wrong shape gets an error result it can read, and the function never sees it.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union, get_args, get_origin

import anyio.to_thread
import attrs
import orjson

from .context import RuntimeContext
from .errors import ToolArgumentError, ToolDefinitionError
from .messages import ImageBlock, OutputBlock, TextBlock, ToolResultBlock, ToolUseBlock
from .models import ToolSpec

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_SCALARS: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


_TRAITS_ATTR = "__hookagent_tool__"
__all__ = ["Tool", "ToolArgumentError", "ToolCall", "error_result", "to_output", "tool"]


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool = False,
    timeout: float | None = None,
) -> Any:
    """Declare a plain function's traits: ``@tool(read_only=True)`` (or bare ``@tool``).

    The function is returned unchanged (still callable as before); ``Tool.from_function``
    and ``register(...)`` read what the decorator recorded.
    """

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        traits = {
            "name": name,
            "description": description,
            "read_only": read_only,
            "concurrency_safe": concurrency_safe,
            "timeout": timeout,
        }
        setattr(f, _TRAITS_ATTR, traits)
        return f

    return mark(func) if func is not None else mark


def _check_timeout(_: Any, __: Any, value: float | None) -> None:
    if value is not None and (not isinstance(value, (int, float)) or not value > 0):
        raise ToolDefinitionError(f"a tool's timeout is a number of seconds > 0, got {value!r}")


def _schema_for(tp: Any, where: str) -> dict[str, Any]:
    if tp is Any or tp is inspect.Parameter.empty:
        return {}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        inner = _schema_for(options[0], where) if len(options) == 1 else {}
        if type(None) in args:
            return {"anyOf": [inner, {"type": "null"}]} if inner else {}
        return {"anyOf": [_schema_for(a, where) for a in options]}
    if tp is list or origin in (list, tuple, typing.Sequence):
        return {"type": "array", "items": _schema_for(args[0], where) if args else {}}
    if tp is dict or origin in (dict, Mapping):
        return {"type": "object"}
    raise ToolDefinitionError(f"{where}: cannot derive a JSON schema for {tp!r}")


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _check(value: Any, schema: dict[str, Any], path: str) -> None:
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            try:
                _check(value, option, path)
                return
            except ToolArgumentError:
                continue
        raise ToolArgumentError(f"{path}: {value!r} matches none of the allowed types")
    if "enum" in schema and value not in schema["enum"]:
        raise ToolArgumentError(f"{path}: {value!r} is not one of {schema['enum']}")
    kind = schema.get("type")
    ok = kind is None or _TYPE_CHECKS[kind](value)
    if not ok:
        raise ToolArgumentError(f"{path}: expected {kind}, got {type(value).__name__}")
    if kind == "array" and schema.get("items"):
        for i, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{i}]")


def _is_async(tool: Tool) -> bool:
    return inspect.iscoroutinefunction(tool.func)


@attrs.frozen
class Tool:
    """A callable the model may use."""

    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., Any] = attrs.field(repr=False)
    ctx_param: str | None = None
    group: str | None = None
    read_only: bool = False
    """It changes nothing outside the call (policies such as plan mode allow it)."""
    concurrency_safe: bool = False
    """It may run at the same time as other calls of one model step."""
    timeout: float | None = attrs.field(default=None, validator=_check_timeout)
    """Seconds before the call is abandoned with an ``error`` result (None: no limit)."""
    is_async: bool = attrs.field(
        init=False, repr=False, eq=False, default=attrs.Factory(_is_async, takes_self=True)
    )
    """``func`` is a coroutine function (awaited on the loop, not run in a thread)."""

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        group: str | None = None,
        read_only: bool | None = None,
        concurrency_safe: bool | None = None,
        timeout: float | None = None,
    ) -> Tool:
        """A tool from a function; explicit traits win over ``@tool``'s, which win over the
        defaults (not read-only, not concurrency-safe, no timeout)."""
        if isinstance(func, Tool):
            return func
        if not callable(func):
            raise ToolDefinitionError(
                f"a tool must be a function (or a Tool), got {type(func).__name__}"
            )
        marked: dict[str, Any] = getattr(func, _TRAITS_ATTR, None) or {}
        name = str(name or marked.get("name") or getattr(func, "__name__", ""))
        description = description if description is not None else marked.get("description")
        if not _NAME.match(name):
            raise ToolDefinitionError(f"tool name {name!r} must match {_NAME.pattern}")
        try:
            hints = typing.get_type_hints(func)  # type: ignore[no-untyped-call,unused-ignore]
        except Exception as exc:
            raise ToolDefinitionError(f"tool {name!r}: cannot read type hints: {exc}") from exc
        props: dict[str, Any] = {}
        required: list[str] = []
        ctx_param = None
        for pname, param in inspect.signature(func).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(f"tool {name!r}: *args/**kwargs are not supported")
            tp = hints.get(pname, param.annotation)
            if tp is RuntimeContext:
                ctx_param = pname
                continue
            props[pname] = _schema_for(tp, f"tool {name!r} parameter {pname!r}")
            if param.default is inspect.Parameter.empty:
                required.append(pname)
        doc = inspect.getdoc(func) or ""
        desc = str(description if description is not None else doc.split("\n\n")[0].strip())
        schema = {
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": False,
        }
        return cls(
            name,
            desc or name,
            schema,
            func,
            ctx_param,
            group,
            read_only=bool(marked.get("read_only", False) if read_only is None else read_only),
            concurrency_safe=bool(
                marked.get("concurrency_safe", False)
                if concurrency_safe is None
                else concurrency_safe
            ),
            timeout=marked.get("timeout") if timeout is None else timeout,
        )

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def check_arguments(self, args: Any) -> None:
        if not isinstance(args, dict):
            raise ToolArgumentError(f"arguments must be an object, got {type(args).__name__}")
        props = self.parameters["properties"]
        unknown = sorted(set(args) - set(props))
        if unknown:
            raise ToolArgumentError(f"unknown argument(s) {unknown}; accepted: {sorted(props)}")
        missing = [p for p in self.parameters["required"] if p not in args]
        if missing:
            raise ToolArgumentError(f"missing required argument(s) {missing}")
        for key, value in args.items():
            _check(value, props[key], key)

    async def invoke(self, args: dict[str, Any], ctx: RuntimeContext) -> Any:
        kwargs = dict(args)
        if self.ctx_param:
            kwargs[self.ctx_param] = ctx
        if self.is_async:
            return await self.func(**kwargs)
        result = await anyio.to_thread.run_sync(lambda: self.func(**kwargs))
        if inspect.isawaitable(result):
            return await result
        return result


def to_output(value: Any) -> tuple[OutputBlock, ...]:
    """Turn what a tool returned into result blocks; raise TypeError if it cannot be stored."""
    if isinstance(value, str):
        return (TextBlock(value),)
    if isinstance(value, (TextBlock, ImageBlock)):
        return (value,)
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, (TextBlock, ImageBlock)) for v in value)
    ):
        return tuple(value)
    if value is None:
        return ()
    try:
        return (TextBlock(orjson.dumps(value).decode()),)
    except TypeError as exc:
        raise TypeError(f"tool returned a {type(value).__name__} that is not JSON: {exc}") from None


def error_result(use: ToolUseBlock, message: str, state: str = "error") -> ToolResultBlock:
    return ToolResultBlock(use.id, use.name, (TextBlock(message),), state)  # type: ignore[arg-type]


@attrs.frozen
class ToolCall:
    """One tool call as it goes through the middleware chain.

    ``tool`` is None for a name the model made up (the kernel answers with an error result).
    ``approved`` is True when a person approved this very call: a middleware that asks for
    confirmation must not ask again (the kernel refuses a second ``confirm`` for it).
    ``remember`` is True when that approval said "and from now on" (``Approve(id,
    remember=True)``): a permission plugin records an allow rule for calls like it.
    """

    use: ToolUseBlock
    tool: Tool | None
    approved: bool = False
    remember: bool = False
