"""The retry policy's arithmetic and the mapping of non-HTTP failures."""

import email.utils
import json
import random

import pytest
from hookagent.errors import MalformedModelResponse, ModelError, ModelUnavailable
from hookagent_model_openai.failures import backoff_delay, classify, parse_retry_after


def test_retry_after_forms():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "150", "retry-after": "9"}) == pytest.approx(0.15)
    now = 1_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30)
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0
    for bad in ({}, None, {"retry-after": "soon"}, {"retry-after": "-3"}, {"retry-after": "nan"}):
        assert parse_retry_after(bad) is None


def test_backoff_is_exponential_capped_and_jittered():
    rng = random.Random(7)
    for retry in range(12):
        nominal = min(8.0, 0.5 * 2**retry)
        for _ in range(50):
            d = backoff_delay(retry, base=0.5, cap=8.0, rng=rng)
            assert nominal / 2 <= d <= nominal
    samples = {round(backoff_delay(3, base=0.5, cap=8.0, rng=rng), 6) for _ in range(20)}
    assert len(samples) > 10  # jitter spreads retries of many clients
    assert backoff_delay(10_000, base=1.0, cap=3.0) <= 3.0  # no overflow


def test_classify_non_http_failures():
    assert isinstance(classify(json.JSONDecodeError("x", "doc", 0)).error, MalformedModelResponse)
    f = classify(ConnectionResetError("reset"))
    assert isinstance(f.error, ModelUnavailable) and f.retryable
    f = classify(TimeoutError())
    assert isinstance(f.error, ModelUnavailable) and f.retryable
    own = ModelUnavailable("cut")
    assert classify(own).error is own and classify(own).retryable
    f = classify(MalformedModelResponse("bad"))
    assert not f.retryable
    f = classify(RuntimeError("boom"))
    assert type(f.error) is ModelError and not f.retryable and "RuntimeError" in str(f.error)
