"""Settings from the environment: one typed reader for every process kind."""

from __future__ import annotations

import pytest

from blackboard import ClientSettings, InvalidArgument
from workers.settings import WorkerSettings


def test_client_settings_convert_by_annotation() -> None:
    s = ClientSettings.from_env(
        {
            "BLACKBOARD_PARTITIONS": "4",
            "BLACKBOARD_CLUSTER": "yes",
            "BLACKBOARD_SOCKET_TIMEOUT": "2.5",
            "BLACKBOARD_REDIS_URL": "redis://h:1/0",
            "BLACKBOARD_RETRIES": "",
        }
    )
    assert (s.partitions, s.cluster, s.socket_timeout, s.redis_url) == (
        4,
        True,
        2.5,
        "redis://h:1/0",
    )
    assert s.retries == ClientSettings().retries  # empty variables are ignored
    assert ClientSettings.from_env({}, partitions=8).partitions == 8


def test_worker_settings_convert_optionals_and_strings() -> None:
    w = WorkerSettings.from_env(
        {
            "BLACKBOARD_WORKER_METRICS_PORT": "9100",
            "BLACKBOARD_WORKER_LLM_RATE": "0.5",
            "BLACKBOARD_WORKER_METRICS_HOST": "0.0.0.0",
            "BLACKBOARD_WORKER_SWEEP_EVERY_S": "1.5",
        }
    )
    assert (w.metrics_port, w.llm_rate, w.metrics_host, w.sweep_every_s) == (
        9100,
        0.5,
        "0.0.0.0",
        1.5,
    )


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("BLACKBOARD_PARTITIONS", "many"),
        ("BLACKBOARD_SOCKET_TIMEOUT", "soon"),
    ],
)
def test_bad_values_name_the_variable(var: str, value: str) -> None:
    with pytest.raises(InvalidArgument, match=var):
        ClientSettings.from_env({var: value})


def test_settings_are_validated_after_reading() -> None:
    with pytest.raises(InvalidArgument, match="lease_ttl_ms"):
        WorkerSettings.from_env({"BLACKBOARD_WORKER_LEASE_TTL_MS": "10"})
