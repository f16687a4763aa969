"""The second dev set is deterministic and well formed; the ablation's verdicts (issue 31
item 3). Pure: no model, no Redis (the bench itself is run by hand, README)."""

from __future__ import annotations

import hashlib
import json
import re

from bench.ablate import verdict
from bench.longchat import generate


def test_longchat_is_deterministic_and_its_evidence_exists() -> None:
    data = generate(seed=7, conversations=2)
    # the same bytes in every process (no set or hash order reaches the generator)
    assert hashlib.sha256(json.dumps(data).encode()).hexdigest()[:16] == "9db87980ae0188a4"
    for conv in data:
        turns = {t["dia_id"]: t for k, v in conv["conversation"].items()
                 if k.startswith("session_") and isinstance(v, list) for t in v}
        assert {t["speaker"] for t in turns.values()} == {"User", "Assistant"}
        longest = max(len(t["text"]) for t in turns.values() if t["speaker"] == "Assistant")
        assert longest > 1500  # long answers: past MiniLM's 256-token window
        for qa in conv["qa"]:
            assert qa["category"] in (1, 2, 3, 4) and qa["evidence"]
            assert all(re.fullmatch(r"D\d+:\d+", e) and e in turns for e in qa["evidence"])
            if qa["category"] == 3:  # the detail asked about is in the answer cited
                assert qa["answer"] in turns[qa["evidence"][0]]["text"]
        # updated facts: a history question cites the first statement and its change
        assert any(q["category"] == 1 and len(q["evidence"]) == 2 for q in conv["qa"])


def test_a_technique_is_kept_only_when_it_gains_on_both_halves() -> None:
    assert verdict((0.01, 0.004)) == "gains on both"
    assert verdict((0.01, 0.0)) == "gains on one"
    assert verdict((0.001, -0.001)) == "neutral"
    assert verdict((0.02, -0.01)) == "costs on one"
    assert verdict((-0.02, -0.01)) == "costs on both"
