"""The CLI's old flags (issue 30 item 2): hidden, still accepted, noted once on stderr;
with the new flag beside them a usage error (exit 2). The names come from
:data:`memory.aliases.ALIASES`."""

from __future__ import annotations

import pytest
import typer

from cli.options import canonical_option
from memory import aliases


def test_cli_takes_the_hidden_old_flag_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    aliases._noted.clear()
    assert canonical_option(None, 3, "max_results", "recall") == 3
    assert canonical_option(None, 4, "max_results", "recall") == 4
    assert canonical_option(5, None, "max_results", "recall") == 5
    err = capsys.readouterr().err
    assert err == ("note: blackboard recall: --limit is deprecated, use --max-results "
                   "(same meaning)\n")
    with pytest.raises(typer.Exit) as done:
        canonical_option(5, 3, "max_results", "recall")
    assert done.value.exit_code == 2
    assert "give --max-results only (--limit is its deprecated name)" in capsys.readouterr().err
