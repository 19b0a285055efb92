"""Test inputs and independent readings of the worker's outputs."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path


def text_corpus(
    directory: Path, *, files: int = 3, lines: int = 4000, vocabulary: int = 20000, seed: int = 1
) -> Path:
    """Text files with what trips up record readers: CRLF lines, empty lines, tabs, non-ASCII words, a long
    line, and a last file without a final newline."""
    rng = random.Random(seed)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyzéß") for _ in range(rng.randint(1, 12)))
        for _ in range(vocabulary)
    ]
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        out: list[str] = []
        for i in range(lines):
            n = 3000 if i == lines // 2 else rng.randint(0, 14)
            sep = rng.choice([" ", " ", "\t", "  "])
            out.append(sep.join(rng.choices(words, k=n)) + ("\r" if i % 7 == 0 else ""))
        body = "\n".join(out) + ("" if f == files - 1 else "\n")
        (directory / f"part-{f}.txt").write_text(body, encoding="utf-8")
    (directory / "_ignored.txt").write_text("hidden files are not input\n")
    return directory


def input_bytes(directory: Path) -> bytes:
    """The visible input files concatenated in name order (what the worker's splits cover)."""
    return b"".join(p.read_bytes() for p in sorted(directory.iterdir()) if not p.name.startswith(("_", ".")))


def input_lines(directory: Path) -> list[bytes]:
    lines: list[bytes] = []
    for p in sorted(directory.iterdir()):
        if not p.name.startswith(("_", ".")):
            data = p.read_bytes()
            lines += data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n")
    return lines


def parts(output: Path, kind: str = "r") -> list[Path]:
    return sorted(output.glob(f"part-{kind}-*"))


def read_counts(output: Path) -> Counter[bytes]:
    """``key<TAB>count`` part files as a Counter, checking that no key appears twice."""
    counts: Counter[bytes] = Counter()
    for part in parts(output):
        for line in part.read_bytes().split(b"\n")[:-1]:
            key, _, value = line.rpartition(b"\t")
            assert key not in counts, f"{key!r} appears twice in the output"
            counts[key] = int(value)
    return counts
