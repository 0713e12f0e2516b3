"""Instructions of one cold ``decode_msgs`` of the W1 session's records, for callgrind.

    python bench/cg_decode.py --write /tmp/w1.records [--calls 1000] [--format 1]
    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        python bench/cg_decode.py --read /tmp/w1.records [--fn decode_msgs]

``--write`` makes the records (the bench's agent on the in-memory store, then
``encode_msg`` or, with ``--format 1``, ``message_doc``), one per line; ``--read`` decodes
them once inside ``functools.reduce`` (the only call callgrind collects), first decode in
a fresh process, as a store's cold load does. Prints the message count.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write")
    ap.add_argument("--read")
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--format", type=int, default=2, choices=(1, 2))
    ap.add_argument("--fn", default="decode_msgs", help="a codec function of a record list")
    a = ap.parse_args()
    if a.write:
        import orjson
        from bytes_ref import w1_messages
        from hookagent.codec import encode_msg, message_doc

        msgs = w1_messages(a.calls)
        enc = encode_msg if a.format == 2 else (lambda m: orjson.dumps(message_doc(m)))
        Path(a.write).write_bytes(b"\n".join(enc(m) for m in msgs) + b"\n")
        print(len(msgs))
        return
    from hookagent import codec

    records = Path(a.read).read_bytes().splitlines()
    fn = getattr(codec, a.fn)
    out = functools.reduce(lambda _, f: f(records), [fn], None)
    print(len(out))


if __name__ == "__main__":
    main()
