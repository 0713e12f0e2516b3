"""The plan_mode_context section: the reference's shape, the old minimal shape, bad values."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent.errors import InvalidState
from hookagent_plan_mode.errors import InvalidPlanModeContext
from hookagent_plan_mode.section import PlanModeContext
from hypothesis import given
from hypothesis import strategies as st


def test_reference_shape_round_trips() -> None:
    doc = {"plan_active": True, "current_plan_file": "PLAN.md"}
    section = PlanModeContext.from_json(doc)
    assert section == PlanModeContext(True, "PLAN.md")
    assert section.to_json() == doc  # exactly the reference's fields: nothing of ours added


def test_old_minimal_shape_is_upcast() -> None:
    section = PlanModeContext.from_json({"active": True, "plan_file": "plans/a.md"})
    assert section == PlanModeContext(True, "plans/a.md")
    assert section.to_json() == {"plan_active": True, "current_plan_file": "plans/a.md"}


def test_old_default_shape_reads_as_inactive() -> None:
    assert PlanModeContext.from_json({"active": False, "plan_file": None}) == PlanModeContext()
    assert PlanModeContext.from_json({}) == PlanModeContext()
    assert PlanModeContext.from_json(None) == PlanModeContext()


def test_plan_text_is_written_only_when_set() -> None:
    section = PlanModeContext(True, None, "1. read\n2. write")
    assert section.to_json() == {
        "plan_active": True,
        "current_plan_file": None,
        "plan_text": "1. read\n2. write",
    }
    assert PlanModeContext.from_json(section.to_json()) == section


def test_unknown_fields_are_kept() -> None:
    doc = {"plan_active": False, "current_plan_file": None, "plan_history": [1, 2]}
    section = PlanModeContext.from_json(doc)
    assert section.extra == {"plan_history": [1, 2]}
    assert section.to_json() == doc


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ([], "expected an object"),
        ({"plan_active": "yes"}, "plan_active"),
        ({"active": 1}, "plan_active"),
        ({"current_plan_file": 3}, "current_plan_file"),
        ({"plan_file": ["a"]}, "current_plan_file"),
        ({"plan_text": {"x": 1}}, "plan_text"),
        ({"plan_active": True, "active": False}, "disagree"),
    ],
)
def test_a_value_that_does_not_fit_is_a_typed_error_naming_the_field(doc: Any, field: str) -> None:
    with pytest.raises(InvalidPlanModeContext, match=field) as err:
        PlanModeContext.from_json(doc)
    assert isinstance(err.value, InvalidState)
    assert "plan_mode_context" in str(err.value)


def test_both_shapes_agreeing_is_fine() -> None:
    doc = {"plan_active": True, "active": True, "current_plan_file": "P.md", "plan_file": "P.md"}
    assert PlanModeContext.from_json(doc) == PlanModeContext(True, "P.md")


@given(
    st.booleans(),
    st.none() | st.text(max_size=40),
    st.none() | st.text(max_size=200),
)
def test_any_section_round_trips(active: bool, plan_file: str | None, text: str | None) -> None:
    section = PlanModeContext(active, plan_file, text)
    assert PlanModeContext.from_json(section.to_json()) == section
