"""Feedback from use cannot be forged or pumped (issue 27 item 4).

A confined agent runs the feedback script itself (no library check in the way) on
another agent's entry, on a team it is not in, on ``collective`` (read-only to it), and
in its own team's scope in a teammate's or an invented agent's name (pumping an entry with
fake voters): Redis refuses each, and nothing anywhere changes.
"""

from __future__ import annotations

from support_attack import AttackEnv, Tally, attack_base, attack_env

from blackboard.feedback import record_feedback

__all__ = ["attack_base", "attack_env"]  # fixtures


async def test_feedback_cannot_be_forged_or_pumped(attack_env: AttackEnv) -> None:
    admin = attack_env.admin
    victim = await attack_env.agent("v1", ("t9",))
    mate = await attack_env.agent("m1", ("t8",))
    attacker = await attack_env.agent("x1", ("t8",))
    private = await victim.scope("agent:v1:stm").write("v1's note")
    foreign_team = await victim.scope("team:t9").write("t9's plan", author="v1")
    shared = await admin.scope("collective").write("what everyone agrees on")
    ours = await mate.scope("team:t8").write("t8's plan", author="m1")
    before = attack_env.snapshot()
    tally = Tally("feedback")
    for scope, e in (("agent:v1:stm", private), ("team:t9", foreign_team),
                     ("collective", shared)):
        for helpful in (True, False):
            await tally.attempt(f"feedback on {scope}", record_feedback(
                attacker.scope(scope), [e.id], by="x1", helpful=helpful))
    for voter in ("m1", "v1", "nobody", "x2", "x3"):  # a teammate's name, invented ones
        await tally.attempt(f"vote as {voter}", record_feedback(
            attacker.scope("team:t8"), [ours.id], by=voter, helpful=True))
    tally.line()
    assert tally.harmed == 0, tally.escapes
    assert attack_env.snapshot() == before
    # its own vote counts, once
    for _ in range(3):
        v = await record_feedback(attacker.scope("team:t8"), [ours.id], by="x1",
                                  helpful=True)
    assert (v[0].uses, v[0].helpful, v[0].reinforced) == (1, 1, False)
    got = await admin.scope("team:t8").get(ours.id)
    assert (got.uses, got.reinforcements, got.reinforced_by) == (1, 1, ("x1",))
