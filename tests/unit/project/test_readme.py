"""README.md is for a newcomer (issue 25): short, and every link in it and in docs/ leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from e2e.readme import readme_commands

REPO = Path(__file__).resolve().parents[3]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: [text](target) with a relative target; the anchor (#...) is dropped.
LINK = re.compile(r"\]\((?!https?://|mailto:|#)([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_reads_in_five_minutes() -> None:
    assert len((REPO / "README.md").read_bytes()) < 8 * 1024


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_of_the_repository(page: Path) -> None:
    broken = [target for target in LINK.findall(page.read_text()) if not (page.parent / target).exists()]
    assert not broken, f"{page.relative_to(REPO)} links to what is not there: {broken}"


def test_readme_commands_are_read_as_a_reader_types_them(tmp_path: Path) -> None:
    page = tmp_path / "README.md"
    page.write_text(
        "You `helm install` it, then `kubectl get mrj` and `make demo`.\n"
        "```console\n"
        "$ helm install x charts/x \\\n"
        "    --set a=b     # a comment\n"
        "$ kubectl get mrj\n"
        "NAME   PHASE\n"
        "pi     Running\n"
        "```\n"
        "```yaml\n"
        "$ not a command\n"
        "```\n"
    )
    commands = readme_commands(page)
    assert [c.text for c in commands] == [
        "kubectl get mrj",
        "make demo",
        "helm install x charts/x --set a=b",
        "kubectl get mrj",
    ]
    assert commands[-1].shown == ("NAME   PHASE", "pi     Running")
