"""One name per concept (issue 30 item 2): the table of canonical names and the old
names still accepted, pinned; every surface reads it (REST models, CLI flags, SDK)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from blackboard import InvalidArgument
from memory import aliases
from memory.aliases import ALIASES, canonical_name, cli_flag, deprecated_keyword
from memory.request_bodies import RecallRequest, StoreRequest


def test_the_table_is_pinned() -> None:
    # A name joins or leaves only with this test: an alias removed breaks its callers.
    assert dict(ALIASES) == {"max_results": ("limit",), "ttl": ("ttl_s", "ttl_seconds")}
    assert canonical_name("limit") == "max_results" and canonical_name("ttl_s") == "ttl"
    assert canonical_name("max_results") == "max_results"
    assert cli_flag("max_results") == "--max-results"


def test_rest_models_take_the_old_names_once_noted(caplog: pytest.LogCaptureFixture) -> None:
    aliases._noted.clear()
    assert RecallRequest.model_validate({"limit": 3}).max_results == 3
    assert RecallRequest.model_validate({"limit": 4}).max_results == 4
    assert StoreRequest.model_validate({"value": "x", "ttl_s": 5}).ttl == 5
    notes = [r.getMessage() for r in caplog.records if r.name == "memory.aliases"]
    assert notes == [
        "POST /v1/recall: 'limit' is deprecated, use 'max_results' (same meaning)",
        "POST /v1/memories: 'ttl_s' is deprecated, use 'ttl' (same meaning)"]
    # the lens fills max_results only when the caller left it unset, under either name
    assert RecallRequest.model_validate({"limit": 2, "lens": "failures"}).max_results == 2
    assert "ttl" in StoreRequest.model_json_schema()["properties"]


def test_old_and_new_name_together_are_refused() -> None:
    with pytest.raises(ValidationError, match="limit"):
        RecallRequest.model_validate({"limit": 3, "max_results": 4})
    with pytest.raises(ValidationError, match="ttl_s"):
        StoreRequest.model_validate({"value": "x", "ttl": 1, "ttl_s": 2})


def test_sdk_keyword_warns_once_and_refuses_both() -> None:
    aliases._noted.clear()
    with pytest.warns(DeprecationWarning, match="'limit' is deprecated, use 'max_results'"):
        assert deprecated_keyword(None, 5, "limit", "AgentMemory.recall()") == 5
    assert deprecated_keyword(7, None, "limit", "AgentMemory.recall()") == 7
    with pytest.raises(InvalidArgument, match="give max_results only"):
        deprecated_keyword(7, 5, "limit", "AgentMemory.recall()")

