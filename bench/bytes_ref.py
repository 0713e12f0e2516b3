"""The byte reference of issue 15: "the compact JSON of the same messages", and our codec's size.

    python bench/bytes_ref.py [--calls 1000] [--json out.json]

**Definition.** The W1 session is made by the bench's own agent (``bench_agent.py``, texts from
``bench_texts.py``) on the in-memory store: ``calls`` calls, 4 messages each (4,000 at 1,000
calls). Each message is written as a plain OpenAI chat-completions dict, exactly the shape of
the peers' ``baselines.py`` (``turn_messages``), which is where the issue's 0.86 MB comes from:

* user: ``{"role": "user", "content": <text>}``
* assistant asking for tools: ``{"role": "assistant", "content": None, "tool_calls": [{"id":
  <call id>, "type": "function", "function": {"name": <tool>, "arguments": json.dumps(<input>)}}]}``
* tool result: ``{"role": "tool", "tool_call_id": <call id>, "content": <text>}``
* assistant text: ``{"role": "assistant", "content": <text>}``

``compact_json`` is ``len(json.dumps(<the list of those dicts>, separators=(",", ":")))``
in bytes (UTF-8; the workload's texts are ASCII). ``lean_json`` is a stricter reference: the
same with ``tool_calls`` items as ``{"id", "name", "arguments"}`` and no ``"content": null``.
Neither holds a message id or a timestamp, which every hookagent message carries (32 hex
characters and a float): that is information, not framing, and it is counted against us.

``codec`` is ``sum(len(hookagent.codec.encode_msg(m)))`` over the same 4,000 messages: what
the kernel hands a store per message record. What a store holds beyond that (keys, envelopes,
columns, pages) is the store's own overhead, measured by ``bench/workload.py``'s byte count.

``--decode`` also times ``hookagent.codec.decode_msgs`` of the 4,000 records (what every
store's cold load calls), as CPU (``time.process_time``): the first decode in the process
and the minimum of 20 more, in format 2 and, for comparison, the same messages in format 1.

Importable: ``reference(calls)`` returns the dict that ``main`` prints.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_agent import make_config, one_call  # noqa: E402
from bench_texts import TOOL_NAME, call_id, final_text, tool_text, user_text  # noqa: E402
from hookagent import Msg  # noqa: E402
from hookagent.codec import decode_msgs, encode_msg, message_doc  # noqa: E402

_COMPACT = (",", ":")


async def _session(calls: int) -> list[Msg]:
    config = make_config("memory")
    for n in range(1, calls + 1):
        await one_call(config, "user-ref", "sess-ref", n)
    store = await config.kernel.store()
    got = await store.get_versioned("user-ref", "sess-ref")
    await config.aclose()
    assert got.state is not None
    return list(got.state.context)


def w1_messages(calls: int = 1000) -> list[Msg]:
    """The W1 session's messages, made by the bench's agent (4 per call)."""
    return asyncio.run(_session(calls))


def openai_dict(msg: Msg, *, lean: bool = False) -> dict[str, Any]:
    """One message as a plain OpenAI chat-completions dict (see the module docstring)."""
    if msg.role == "tool":
        (result,) = msg.tool_results
        return {"role": "tool", "tool_call_id": result.id, "content": result.text}
    uses = msg.tool_uses
    if uses:
        calls = [
            {"id": u.id, "name": u.name, "arguments": json.dumps(u.input)}
            if lean
            else {
                "id": u.id,
                "type": "function",
                "function": {"name": u.name, "arguments": json.dumps(u.input)},
            }
            for u in uses
        ]
        doc: dict[str, Any] = {"role": msg.role}
        if not lean:
            doc["content"] = msg.text or None
        doc["tool_calls"] = calls
        return doc
    return {"role": msg.role, "content": msg.text}


def _peers_turn(n: int) -> list[dict[str, Any]]:
    """The peers' ``baselines.turn_messages(n)``, copied: the check that the shape matches."""
    return [
        {"role": "user", "content": user_text(n)},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id(n),
                    "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": f'{{"key": {n}}}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id(n), "content": tool_text(n)},
        {"role": "assistant", "content": final_text(n)},
    ]


def reference(calls: int = 1000, msgs: list[Msg] | None = None) -> dict[str, Any]:
    """Bytes of the W1 session's messages: compact JSON, lean JSON, our codec's records."""
    msgs = w1_messages(calls) if msgs is None else msgs
    dicts = [openai_dict(m) for m in msgs]
    peers = [d for n in range(1, calls + 1) for d in _peers_turn(n)]
    if dicts != peers:
        raise AssertionError("the W1 messages do not match the peers' baselines shape")
    compact = len(json.dumps(dicts, separators=_COMPACT).encode())
    lean = len(json.dumps([openai_dict(m, lean=True) for m in msgs], separators=_COMPACT).encode())
    codec = sum(len(encode_msg(m)) for m in msgs)
    return {
        "messages": len(msgs),
        "compact_json": compact,
        "lean_json": lean,
        "codec": codec,
        "codec_over_compact": round(codec / compact, 3),
        "codec_over_lean": round(codec / lean, 3),
        "codec_per_message": round(codec / len(msgs), 1),
        "compact_per_message": round(compact / len(msgs), 1),
    }


def decode_cpu(msgs: list[Msg], reps: int = 20) -> dict[str, float]:
    """CPU ms of ``decode_msgs`` over the messages' records: format 2, then format 1."""
    import gc
    import time

    import orjson

    out: dict[str, float] = {}
    for fmt, records in (
        ("format2", [encode_msg(m) for m in msgs]),
        ("format1", [orjson.dumps(message_doc(m)) for m in msgs]),
    ):
        times = []
        for _ in range(reps + 1):
            gc.collect()
            t = time.process_time()
            decoded = decode_msgs(records)
            times.append((time.process_time() - t) * 1000)
            assert decoded == msgs
        out[f"{fmt}_first_cpu_ms"] = round(times[0], 2)
        out[f"{fmt}_min_cpu_ms"] = round(min(times[1:]), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--decode", action="store_true", help="also time decode_msgs (CPU)")
    a = ap.parse_args()
    msgs = w1_messages(a.calls)
    out = reference(a.calls, msgs)
    if a.decode:
        with open("/proc/loadavg") as fh:
            out["loadavg"] = fh.read().split()[:3]
        out.update(decode_cpu(msgs))
    print(json.dumps(out))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
