"""README.md is for a newcomer (issue 25): short, and every link in it and in docs/ leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: [text](target) with a relative target; the anchor (#...) is dropped.
LINK = re.compile(r"\]\((?!https?://|mailto:|#)([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_reads_in_five_minutes() -> None:
    assert len((REPO / "README.md").read_bytes()) < 8 * 1024


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_of_the_repository(page: Path) -> None:
    broken = [target for target in LINK.findall(page.read_text()) if not (page.parent / target).exists()]
    assert not broken, f"{page.relative_to(REPO)} links to what is not there: {broken}"
