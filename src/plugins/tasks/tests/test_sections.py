"""The projection's parse cache: by object, then by content; never stale, never hiding a
bad section."""

from __future__ import annotations

import copy

import pytest
from hookagent_tasks import InvalidTasksSection, TasksContext, replace_todos, section_json
from hookagent_tasks.sections import ParseCache


def raw(*subjects: str) -> dict[str, object]:
    tc = replace_todos(TasksContext(), [{"content": s, "status": "pending"} for s in subjects])
    return section_json(tc)


def test_the_same_object_and_the_same_content_hit() -> None:
    cache = ParseCache()
    first = raw("a", "b")
    parsed = cache.get(first)
    assert cache.get(first) is parsed
    assert cache.get(copy.deepcopy(first)) is parsed  # reloaded: a new object, same content
    assert [t.subject for t in parsed.tc.tasks] == ["a", "b"]


def test_changed_content_is_parsed_again() -> None:
    cache = ParseCache()
    first = raw("a")
    assert cache.get(first).tc.tasks[0].subject == "a"
    first["tasks"][0]["subject"] = "edited in place"  # type: ignore[index]
    first["revision"] = 9
    assert cache.get(first).tc.tasks[0].subject == "edited in place"
    other = raw("c")
    assert cache.get(other).tc.tasks[0].subject == "c"


def test_a_bad_section_raises_every_time() -> None:
    cache = ParseCache()
    bad = {"tasks": [{"id": "x", "subject": "a"}]}
    for _ in range(2):
        with pytest.raises(InvalidTasksSection, match="is not 32 lowercase hex"):
            cache.get(bad)


def test_the_cache_is_bounded() -> None:
    cache = ParseCache(size=3)
    kept = [raw(f"t{i}") for i in range(10)]
    for item in kept:
        cache.get(item)
    assert len(cache._by_id) == 3 and len(cache._by_content) == 3
