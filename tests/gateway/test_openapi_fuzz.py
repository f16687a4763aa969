"""Schemathesis over the gateway's own OpenAPI (issue 24, item 8): every operation, valid
and invalid inputs, every check (``--checks all``), against a real gateway process: no
server error, no response outside the declared schema, and no schema-valid request refused
but by a rule JSON Schema cannot state (:data:`CROSS_FIELD`).

Bounded: ``OPENAPI_FUZZ_EXAMPLES`` cases per operation and mode (default 12), derandomized
unless ``OPENAPI_FUZZ_RANDOM`` is set. The event stream (``text/event-stream``, endless by
design) is left out: a fuzzer's request would hold it open; ``test_rest_events.py`` covers
it. What the run found and the schema or the gateway now says: error statuses with the
error body on every route, typed levels, names, ids and tags, JSON numbers that are not
bools or strings, a huge ``ttl_s`` refused (it was a 500), filter tags validated.
"""

from __future__ import annotations

import contextlib
import os
import re
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable

schemathesis = pytest.importorskip(
    "schemathesis", reason="needs schemathesis: pip install schemathesis (the dev extra)")

from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import CHECKS  # noqa: E402

EXAMPLES = int(os.environ.get("OPENAPI_FUZZ_EXAMPLES", "12"))
#: The same cases every run (CI stays stable); ``OPENAPI_FUZZ_RANDOM=1`` explores anew.
RANDOM = bool(os.environ.get("OPENAPI_FUZZ_RANDOM"))
STREAMS = {"/v1/events"}
#: Rules JSON Schema cannot state (one field against another, a name's argument, the
#: Unicode of nested strings): a schema-valid request refused by one of them (ST202, 422)
#: is expected; any other refusal means the schema is looser than the gateway.
CROSS_FIELD = (
    "an agent scope needs a level",  # level null only with a team
    "is after its end",  # time_range (start, end)
    "contradictory tag filter",
    "order='newest'", "needs order='relevance'",
    "takes no argument", "needs a subject",  # a lens's argument
    "not valid Unicode", "lone surrogate",  # strings nested in value/metadata
    "is in the future",  # as_of: against the clock of the request
    "give query text", "choose one",  # an intent against query / consistency
    "is not a date",  # timeline's at: a calendar's days (2023-02-30)
    "a level needs a time",  # timeline's level against at
    "names no scope",  # a bare segment id against the caller's scopes
)


def _all_checks() -> list:  # type: ignore[type-arg]
    """Every registered check (the CLI's ``--checks all``)."""
    from schemathesis.checks import load_all_checks

    load_all_checks()
    return list(CHECKS.get_all())


def _summary(label: str, exc: BaseException) -> list[str]:
    """One line per distinct failure: operation, check, status, the server's detail."""
    text = str(exc)
    checks = re.findall(r"^- (ST\d+ [^\n]+)", text, re.M) or [type(exc).__name__]
    status = re.search(r"^\[(\d{3})\]", text, re.M)
    detail = re.search(r'"detail":"([^"]{0,160})', text)
    return [f"{label}: {c} [{status.group(1) if status else '-'}] "
            f"{detail.group(1) if detail else text.strip()[:300]!s}" for c in checks]


def _run(op, mode, headers, checks, failures: list[str]) -> int:  # type: ignore[no-untyped-def]
    """Up to ``EXAMPLES`` cases of ``op`` in ``mode``, every check; failures collected."""
    calls = 0
    label = f"{op.method.upper()} {op.path} [{mode.value}]"

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not RANDOM,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=op.as_strategy(generation_mode=mode))
    def one(case) -> None:  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        try:
            case.call_and_validate(headers=headers, checks=checks, timeout=30)
        except (Exception, BaseExceptionGroup) as exc:  # failed checks: collected
            failures.extend(_summary(label, exc))

    with contextlib.suppress(Unsatisfiable):  # nothing to make invalid (no input)
        one()
    return calls


@pytest.mark.process
def test_openapi_fuzz_no_server_error_no_response_outside_schema(gateway):
    tok = gateway.token("alice", ["t1"])
    headers = {"Authorization": f"Bearer {tok}"}
    schema = schemathesis.openapi.from_url(gateway.url + "/openapi.json")
    checks = _all_checks()
    failures: list[str] = []
    calls = 0
    started = time.monotonic()
    for result in schema.get_all_operations():
        op = result.ok()
        if op.path in STREAMS:
            continue
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            calls += _run(op, mode, headers, checks, failures)
    took = time.monotonic() - started
    expected = sorted({f for f in failures if " ST202 " in f and "[422]" in f
                       and any(r in f for r in CROSS_FIELD)})
    distinct = sorted(set(failures) - set(expected))
    print(f"openapi fuzz: schema-valid requests refused by a cross-field rule: {len(expected)}")
    print(f"openapi fuzz: {calls} calls in {took:.1f}s, {len(distinct)} failures")
    assert not distinct, "\n".join(distinct)
