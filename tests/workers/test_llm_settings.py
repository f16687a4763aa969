"""The workers' LLM from settings: ``BLACKBOARD_LLM_*`` (the ``BLACKBOARD_WORKER_LLM_*``
names still work), per-role on/off, and one clear line for a bad setting."""

from __future__ import annotations

import pytest

from blackboard import InvalidArgument
from workers.llm import transformer_llm
from workers.roles import EDGE_ROLES
from workers.settings import WorkerSettings

LLM = {"BLACKBOARD_LLM_URL": "http://127.0.0.1:11434/v1", "BLACKBOARD_LLM_MODEL": "llama3.2"}


def test_short_names_set_the_llm() -> None:
    s = WorkerSettings.from_env(
        {**LLM, "BLACKBOARD_LLM_API_KEY": "k", "BLACKBOARD_LLM_MAX_TOKENS": "256",
         "BLACKBOARD_LLM_RATE": "2"}
    )
    assert (s.llm_base_url, s.llm_model, s.llm_api_key) == (
        "http://127.0.0.1:11434/v1", "llama3.2", "k"
    )
    assert (s.llm_max_tokens, s.llm_rate) == (256, 2.0)
    assert s.llm_role_set() == frozenset(EDGE_ROLES)  # every role by default


def test_worker_names_still_work_and_may_repeat_the_short_ones() -> None:
    s = WorkerSettings.from_env(
        {"BLACKBOARD_WORKER_LLM_BASE_URL": LLM["BLACKBOARD_LLM_URL"], **LLM}
    )
    assert s.llm_base_url == LLM["BLACKBOARD_LLM_URL"] and s.llm_model == "llama3.2"


async def test_roles_turn_the_llm_on_per_role() -> None:
    s = WorkerSettings.from_env({**LLM, "BLACKBOARD_LLM_ROLES": " summarize, semantic "})
    assert s.llm_role_set() == {"summarize", "semantic"}
    on = transformer_llm(s, "summarize")
    assert on is not None and on.model == "llama3.2"
    await on.aclose()
    assert transformer_llm(s, "episodic") is None  # its LLM-free path
    assert transformer_llm(WorkerSettings(), "summarize") is None  # no endpoint at all


@pytest.mark.parametrize(
    ("env", "line"),
    [
        ({**LLM, "BLACKBOARD_LLM_ROLES": "summarize,sematic"},
         "BLACKBOARD_LLM_ROLES names unknown role 'sematic': use some of episodic"),
        ({"BLACKBOARD_LLM_URL": "http://a/v1"}, "set both BLACKBOARD_LLM_URL and "
         "BLACKBOARD_LLM_MODEL"),
        ({**LLM, "BLACKBOARD_WORKER_LLM_MODEL": "other"},
         "BLACKBOARD_LLM_MODEL and BLACKBOARD_WORKER_LLM_MODEL disagree"),
        ({**LLM, "BLACKBOARD_LLM_TOKEN_BUDGET": "lots"},
         "BLACKBOARD_LLM_TOKEN_BUDGET='lots' is not a valid int"),
        ({**LLM, "BLACKBOARD_LLM_MAX_TOKENS": "0"}, "BLACKBOARD_LLM_MAX_TOKENS must be >= 1"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(env: dict[str, str], line: str) -> None:
    with pytest.raises(InvalidArgument) as ei:
        WorkerSettings.from_env(env)
    assert line in str(ei.value) and "\n" not in str(ei.value)
