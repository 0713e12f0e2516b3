"""Schemathesis over the served OpenAPI document, at a small fixed budget: every route, with
generated (valid and invalid) input, answers a documented status with a body matching the
document, and never a 500. Deterministic: derandomized, no example database.

The operations are driven through hypothesis directly (``operation.as_strategy()``): the
schemathesis pytest plugin does not run under this pytest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from server_support import auth, serving

BUDGET = settings(
    max_examples=12,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def operations() -> Iterator[list[Any]]:
    with serving() as (url, _):
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
        schema.config.update(base_url=url)
        # 400 is the documented answer to a request that fits the schema but not the server
        # (two idempotency keys that differ, an unknown state section, a Last-Event-ID that
        # is no seq): schema-valid, so the positive check must accept it too
        schema.config.checks.positive_data_acceptance.expected_statuses = [
            *schema.config.checks.positive_data_acceptance.expected_statuses,
            "400",
        ]
        # the event streams follow the log until the client leaves: tested in test_http.py
        ops = [r.ok() for r in schema.exclude(path_regex="/events$").get_all_operations()]
        yield ops


def test_the_document_lists_every_route(operations: list[Any]) -> None:
    assert len(operations) >= 17


def test_every_route_answers_as_documented_and_never_500(operations: list[Any]) -> None:
    for operation in operations:

        @BUDGET
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            response = case.call_and_validate(headers=auth("alice"))
            assert response.status_code < 500

        check()


def test_without_credentials_every_v1_route_is_a_typed_401(operations: list[Any]) -> None:
    for operation in operations:

        @settings(BUDGET, max_examples=3)
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            response = case.call()
            if case.path.startswith("/v1"):
                assert response.status_code in (401, 422), response.text  # 422: before auth
                kind = response.json()["error"]["type"]
                assert kind in ("Unauthenticated", "RequestValidationError")
            else:
                assert response.status_code < 500

        check()
