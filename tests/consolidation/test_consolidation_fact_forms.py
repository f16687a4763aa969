"""The LLM-free fact extractor beyond five verbs: a table of sentences and the facts read
off them (copular, possessive, negation, dates, quantities, preferences), and the keys of
the facts it read before kept as they were."""

from __future__ import annotations

import pytest

from consolidation.fact_forms import iso_date
from consolidation.facts import Fact, facts_from_text
from consolidation.kinds import canonical_key
from retrieval.belief_keys import slot_of_key

TABLE: list[tuple[str, tuple[str, str, str, bool] | None]] = [
    # the five verbs, as before
    ("Acme Corp uses net-30 payment terms.", ("Acme Corp", "uses", "net-30 payment terms", False)),
    ("Globex prefers email invoices.", ("Globex", "prefers", "email invoices", False)),
    ("Initech has a dedicated billing portal.",
     ("Initech", "has", "dedicated billing portal", False)),
    ("Acme Corp lives in Shelbyville.", ("Acme Corp", "lives_in", "Shelbyville", False)),
    # copular
    ("Alice is a project manager.", ("Alice", "is", "project manager", False)),
    ("Alice is now a manager.", ("Alice", "is", "manager", False)),
    ("Bob became the team lead.", ("Bob", "is", "team lead", False)),
    ("Acme Corp is based in Springfield.", ("Acme Corp", "lives_in", "Springfield", False)),
    # possessive
    ("Acme's CEO is Jane Doe.", ("Acme", "ceo", "Jane Doe", False)),
    ("Acme Corp's payment terms are net-60.", ("Acme Corp", "payment_terms", "net-60", False)),
    ("The billing contact of Globex is Carol.", ("Globex", "billing_contact", "Carol", False)),
    ("Initech\u2019s auditor is no longer Deloitte.", ("Initech", "auditor", "Deloitte", True)),
    # negation
    ("Alice is not a manager.", ("Alice", "is", "manager", True)),
    ("Globex doesn't use paper invoices.", ("Globex", "uses", "paper invoices", True)),
    ("Alice stopped using Slack.", ("Alice", "uses", "Slack", True)),
    ("Initech was not founded in 1999.", ("Initech", "founded_in", "1999", True)),
    # dates
    ("Initech was founded in March 1999.", ("Initech", "founded_in", "1999-03", False)),
    ("The audit is due on 2024-05-03.", ("audit", "due_on", "2024-05-03", False)),
    ("Acme Corp renews on May 3, 2024.", ("Acme Corp", "renews_on", "2024-05-03", False)),
    ("Carol joined on 7th July 2021.", ("Carol", "joined_on", "2021-07-07", False)),
    # quantities
    ("The license costs $40 per seat.", ("license", "costs", "$40 per seat", False)),
    ("Acme Corp employs 1,200 people.", ("Acme Corp", "employs", "1,200 people", False)),
    ("The pallet weighs 3.5 kg.", ("pallet", "weighs", "3.5 kg", False)),
    ("Globex owes 12% of the invoice.", ("Globex", "owes", "12% of the invoice", False)),
    # preferences
    ("Bob likes green tea.", ("Bob", "likes", "green tea", False)),
    ("Bob no longer likes coffee.", ("Bob", "likes", "coffee", True)),
    ("Bob dislikes long meetings.", ("Bob", "likes", "long meetings", True)),
    ("Globex switched to paper invoices.", ("Globex", "prefers", "paper invoices", False)),
    ("Globex no longer prefers email invoices.", ("Globex", "prefers", "email invoices", True)),
    ("Acme Corp moved to Shelbyville.", ("Acme Corp", "lives_in", "Shelbyville", False)),
    # not facts
    ("Acme looks like a bank.", None),
    ("Does Globex prefer email?", None),
    ("It happened on 2024-02-30.", None),
]


@pytest.mark.parametrize(("sentence", "fact"), TABLE, ids=[s for s, _ in TABLE])
def test_sentence_table(sentence: str, fact: tuple[str, str, str, bool] | None) -> None:
    assert facts_from_text(sentence) == ([fact] if fact else [])


def test_demo_facts_keep_their_keys() -> None:
    """Semantic memory (and another issue's belief model) key on these: they must not move.
    The slot (a key without kind and subject type, the form beliefs were stored under
    before issue 25) is what raw statements and stored beliefs of the older form match."""
    def key(text: str) -> str:
        [(s, p, o, n)] = facts_from_text(text)
        return canonical_key(Fact(s, p, o, n, "e1", 0))

    keys = {
        "Acme Corp uses net-30 payment terms.":
            "fact:tooling_state:entity:acme-corp:uses:net-30-payment-terms",
        "Globex prefers email invoices.": "fact:operator_preference:entity:globex:prefers",
        # contradicts: the same key
        "Globex switched to paper invoices.": "fact:operator_preference:entity:globex:prefers",
        "Initech has a dedicated billing portal.":
            "fact:world_fact:entity:initech:has:dedicated-billing-portal",
        "Acme Corp lives in Springfield.": "fact:world_fact:entity:acme-corp:lives_in",
        "Acme Corp moved to Shelbyville.": "fact:world_fact:entity:acme-corp:lives_in",
    }
    assert {t: key(t) for t in keys} == keys
    assert {slot_of_key(k) for k in keys.values()} == {
        "fact:acme-corp:uses:net-30-payment-terms", "fact:globex:prefers",
        "fact:initech:has:dedicated-billing-portal", "fact:acme-corp:lives_in"}


@pytest.mark.parametrize(("text", "iso"), [
    ("2024-05-03", "2024-05-03"), ("2024-5", "2024-05"), ("May 3, 2024", "2024-05-03"),
    ("3 May 2024", "2024-05-03"), ("Sept 2023", "2023-09"), ("1999", "1999"),
    ("2024-02-29", "2024-02-29"), ("2023-02-29", None), ("2024-13", None), ("Springfield", None),
])
def test_iso_date(text: str, iso: str | None) -> None:
    assert iso_date(text) == iso
