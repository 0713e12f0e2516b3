"""Write ``tests/data/format2`` with the previous code: ``python write_format2.py ROOT``.

Run with the format-2 package (commit 3e94745, before first saves wrote format-3 heads)
first on the path: ``git archive 3e94745 src | tar -x -C /tmp/old`` and
``PYTHONPATH=/tmp/old/src/plugins/store-jsonfile``.
"""

import shutil
import sys
from pathlib import Path

from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile.localcore import LocalCore

root = Path(sys.argv[1])
shutil.rmtree(root, ignore_errors=True)
core = LocalCore(root, sweep_after=None, cache_slots=0, writers="multi")
st = AgentState("sess-v2", "user-v2")
st.context.extend([Msg.user("first"), Msg.assistant("reply " * 40)])
v = core.save("user-v2", "sess-v2", st, 0, "agent_state", None)  # a first save: head + log
for turn in range(2):
    got = core.get("user-v2", "sess-v2", "agent_state").state
    assert got is not None
    got.context.extend([Msg.user(f"q{turn}"), Msg.assistant(f"a{turn}")])
    got.summary = f"v{v + 1}"
    v = core.save("user-v2", "sess-v2", got, v, "agent_state", None)  # appends
assert v == 3
only = AgentState("sess-first", "user-v2")
only.context.append(Msg.user("alone"))
assert core.save("user-v2", "sess-first", only, 0, "agent_state", None) == 1
core.close()
