"""``hookagent.testing`` without pytest: the doubles import, the conformance names say why not.

Run in a subprocess where ``import pytest`` fails (``sys.modules["pytest"] = None``), so the
check does not depend on how this interpreter was set up; ``tests/test_installed_wheels.py``
checks the same from built wheels in a venv that really has no pytest.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PRELUDE = "import sys\nsys.modules['pytest'] = None  # as if pytest were not installed\n"


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_doubles_and_corpora_import_without_pytest() -> None:
    result = run(
        """
        import anyio
        from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext
        from hookagent.testing import (
            ENVELOPES, HOSTILE_IDS, INVALID_IDS, HookCall, HookRecorder, ScriptedModel, tool_call,
        )
        config = AgentConfig(model=ScriptedModel(default="hi"), state_store=InMemoryAgentStateStore(),
                             autoload_plugins=False)
        print(config.build().call_sync("x", RuntimeContext(user_id="u")).text)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hi"


def test_each_conformance_name_says_it_needs_pytest() -> None:
    for name in ("StoreConformance", "SessionLogConformance", "every_block_message", "full_state"):
        result = run(
            f"""
            try:
                from hookagent.testing import {name}
            except ModuleNotFoundError as exc:
                print(exc.name, "|", exc)
            """
        )
        assert result.returncode == 0, result.stderr
        missing, _, message = result.stdout.partition(" | ")
        assert missing == "pytest"
        assert f"hookagent.testing.{name}" in message and "pip install" in message


def test_an_unknown_name_is_an_attribute_error() -> None:
    result = run(
        """
        import hookagent.testing as t
        try:
            t.NoSuchHelper
        except AttributeError as exc:
            print(exc)
        print("ScriptedModel" in dir(t), "StoreConformance" in dir(t))
        """
    )
    assert result.returncode == 0, result.stderr
    assert "has no attribute 'NoSuchHelper'" in result.stdout
    assert result.stdout.strip().endswith("True True")


def test_with_pytest_the_conformance_names_are_the_real_ones() -> None:
    from hookagent import testing
    from hookagent.testing.conformance import StoreConformance, full_state

    assert testing.StoreConformance is StoreConformance and testing.full_state is full_state
    from hookagent.testing.log_conformance import SessionLogConformance

    assert testing.SessionLogConformance is SessionLogConformance
