"""Redaction (judge_service/redaction.py): what counts as a credential in a line, what is left alone
untouched, remembered secrets, and the log filter on httpx's own lines and on tracebacks."""

from __future__ import annotations

import base64
import io
import logging

import httpx
import pytest
from pydantic import TypeAdapter, ValidationError

from judge_service.judging.jury.spec import JurorSpec
from judge_service.redaction import LOG_FILTER, describe_invalid, protect_logs, redact, remember


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "HTTP Request: GET http://user:pw@127.0.0.1:8001/v1/models",
            "HTTP Request: GET http://***@127.0.0.1:8001/v1/models",
        ),
        ("postgresql+psycopg://judge:s3cret@db:5432/j", "postgresql+psycopg://***@db:5432/j"),
        ("https://x-token@host/v1 and http://a:p@ss@h/", "https://***@host/v1 and http://***@h/"),
        ("GET https://h/v1/models?api_key=abc123&page=2", "GET https://h/v1/models?api_key=***&page=2"),
        ("url='https://h/v1?x=1&Access_Token=t0k#frag'", "url='https://h/v1?x=1&Access_Token=***#frag'"),
        ("/files?token=aa&sig=bb&X-Amz-Signature=cc", "/files?token=***&sig=***&X-Amz-Signature=***"),
    ],
)
def test_credentials_in_urls_and_queries_are_masked(text: str, redacted: str) -> None:
    assert redact(text) == redacted


@pytest.mark.parametrize(
    "text",
    [
        "openai judge backend ready: endpoint=http://127.0.0.1:8001/v1 model=judge max_context_tokens=None",
        "POST /v1/judge?group_key=run-1 200 key=trainer 12.1 ms",
        "mail ops@example.com, see https://example.com/docs?page=2",
        "accepted: postgresql://<user>:<password>@host:port/database",
    ],
)
def test_a_line_without_credentials_is_the_same_object(text: str) -> None:
    assert redact(text) is text  # nothing copied or rewritten for the ordinary line


def test_remembered_credentials_are_masked_anywhere() -> None:
    remember("sk-remembered-4c1f", "http://u:pass-remembered-77@h/v1?api_key=query-remembered-9", None, "ab")
    line = "upstream said: sk-remembered-4c1f is wrong; pass-remembered-77 and query-remembered-9 too"
    assert redact(line) == "upstream said: *** is wrong; *** and *** too"
    assert redact("a cab ran") == "a cab ran"  # too short to mask everywhere without garbling lines


def test_a_url_password_is_masked_as_an_upstream_echoes_it_in_a_basic_header() -> None:
    remember("http://juror:echoed-basic-pw@judge:8000/v1")
    basic = base64.b64encode(b"juror:echoed-basic-pw").decode()
    line = f"upstream 401: {{'detail': 'bad credentials', 'authorization': 'Basic {basic}'}}"
    assert basic not in redact(line) and "Basic ***" in redact(line)


def test_httpx_request_lines_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    protect_logs()
    caplog.set_level(logging.INFO, logger="httpx")
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={}))
    with httpx.Client(base_url="http://judge:httpx-pw-31@127.0.0.1:9/v1/", transport=transport) as client:
        client.get("models")
    assert "HTTP Request: GET http://***@127.0.0.1:9/v1/models" in caplog.text
    assert "httpx-pw-31" not in caplog.text


def test_a_traceback_through_a_filtered_handler_is_masked() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(LOG_FILTER)
    log = logging.getLogger("tests.redaction")
    log.addHandler(handler)
    try:
        try:
            raise RuntimeError("could not reach http://user:trace-pw-5@judge/v1")
        except RuntimeError:
            log.exception("start failed for %s", "http://user:arg-pw-6@judge/v1")
    finally:
        log.removeHandler(handler)
    printed = stream.getvalue()
    assert "start failed for http://***@judge/v1" in printed and "RuntimeError: could not reach" in printed
    assert "trace-pw-5" not in printed and "arg-pw-6" not in printed


def test_validation_errors_are_described_without_the_values_given() -> None:
    entry = {"name": "a", "base_url": "http://h/v1", "api_key": "sk-described-0e4"}
    with pytest.raises(ValidationError) as raised:
        TypeAdapter(list[JurorSpec]).validate_python([entry])
    assert "sk-described-0e4" in str(raised.value)  # pydantic's own text quotes the entry
    described = describe_invalid(raised.value, lambda where: f"JUDGE_JURY[{where}]")
    assert described.startswith("JUDGE_JURY[0]: judge 'a': give base_url and model")
    assert "sk-described-0e4" not in described
