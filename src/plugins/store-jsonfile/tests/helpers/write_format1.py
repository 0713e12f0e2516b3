"""Write ``tests/data/format1`` with the previous code: ``python write_format1.py ROOT``.

Run with the format-1 package first on the path, e.g. ``git archive 543da24
src/plugins/store-jsonfile/hookagent_store_jsonfile | tar -x -C /tmp/old`` and
``PYTHONPATH=/tmp/old/src/plugins/store-jsonfile``.
"""

import shutil
import sys
from pathlib import Path

from hookagent.messages import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from hookagent.state import AgentState
from hookagent_store_jsonfile.localcore import LocalCore
from hookagent_store_jsonfile.records import RECORD

root = Path(sys.argv[1])
shutil.rmtree(root, ignore_errors=True)
core = LocalCore(root, sweep_after=None, cache_slots=0, writers="multi")
st = AgentState("sess-v1", "user-v1")
st.context.extend(
    [
        Msg.user("short"),
        Msg.user("long " * 60),
        Msg.assistant([ToolUseBlock("c1", "lookup", {"key": 1})]),
        Msg("tool", [ToolResultBlock("c1", "lookup", (TextBlock("result " * 30),), "success")]),
    ]
)
v = core.save("user-v1", "sess-v1", st, 0, "agent_state", None)  # rewrite
st = core.get("user-v1", "sess-v1", "agent_state").state
st.context.extend([Msg.user("second"), Msg.assistant("answer " * 40)])
st.summary = "v2"
v = core.save("user-v1", "sess-v1", st, v, "agent_state", None)  # append
st = core.get("user-v1", "sess-v1", "agent_state").state
st.context.append(Msg.user("third"))
st.summary = "v3"
v = core.save("user-v1", "sess-v1", st, v, "agent_state", None)  # append
assert v == 3
# a second slot: a killed old writer left an uncommitted tail of records beyond the head
st2 = AgentState("sess-torn", "user-v1")
st2.context.extend([Msg.user("a"), Msg.user("b " * 80)])
core.save("user-v1", "sess-torn", st2, 0, "agent_state", None)
kd = root / "user-v1" / "sess-torn" / "agent_state"
log = next(p for p in kd.iterdir() if p.name.endswith(".log"))
with open(log, "ab") as fh:
    fh.write(RECORD.pack(50, 123) + b'{"role": "us')
print("ok", sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()))
