"""The commands README.md shows, as a reader would type them: each ``$`` line of its console blocks (with its
``\\`` continuations, and the output shown under it) and each inline ``code`` span that is a command (a program,
its verb and what it acts on; or a make target)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: What an inline code span must start with to be a command a reader would run.
PROGRAMS = ("kubectl ", "helm ", "make ", "mrsched ")


@dataclass(frozen=True)
class Command:
    text: str  # as typed, continuations joined, the trailing comment dropped
    shown: tuple[str, ...] = ()  # the output README shows under it


def readme_commands(readme: Path) -> list[Command]:
    """Every command in ``readme``, in the order it appears."""
    commands: list[Command] = []
    in_console = False
    typed: list[str] = []
    for line in readme.read_text().splitlines():
        if line.startswith("```"):
            in_console = not in_console and line.strip() == "```console"
            continue
        if in_console:
            if typed:  # a continuation of the command above
                typed.append(line.strip())
            elif line.startswith("$ "):
                typed = [line[2:].strip()]
            elif commands and line.strip():
                last = commands[-1]
                commands[-1] = Command(last.text, (*last.shown, line))
                continue
            else:
                continue
            if typed[-1].endswith("\\"):
                typed[-1] = typed[-1][:-1].strip()
            else:
                commands.append(Command(_without_comment(" ".join(typed))))
                typed = []
        else:
            for span in re.findall(r"`([^`]+)`", line):
                # A program and its verb alone ("you `helm install` it") is prose naming a step; a command
                # says what to act on.
                if span.startswith(PROGRAMS) and (len(span.split()) > 2 or span.startswith("make ")):
                    commands.append(Command(span.strip()))
    return commands


def _without_comment(text: str) -> str:
    # README's comments follow the command after spaces and a "#" (no command here quotes a "#").
    return re.sub(r"\s+#\s.*$", "", text).strip()
