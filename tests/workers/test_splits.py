"""Input splits: wherever the byte boundaries fall, every line is read by exactly one split."""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path

import pytest

from mrworker.report import Counters
from mrworker.splits import Split, nth_split, read_blocks, split_lines


@pytest.mark.parametrize("seed", range(8))
def test_any_boundaries_read_each_line_once(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    lines = [bytes(rng.choice(b"ab\r ") for _ in range(rng.choice([0, 1, 5, 40, 300]))) for _ in range(400)]
    data = b"\n".join(lines) + (b"\n" if seed % 2 else b"")  # odd seeds end with a newline
    path = tmp_path / "input"
    path.write_bytes(data)
    cuts = sorted({0, len(data), *(rng.randrange(len(data)) for _ in range(rng.randint(1, 30)))})
    block = rng.choice([1, 7, 64, 4096])  # small blocks exercise lines longer than a block

    read: list[bytes] = []
    counters = Counters()
    for start, end in pairwise(cuts):
        for chunk in read_blocks(Split(path, start, end - start), counters, block):
            assert chunk.endswith(b"\n") or end >= len(data), "blocks hold whole lines"
            read += split_lines(chunk)
    assert read == split_lines(data)


def test_nth_split_covers_files_in_name_order(tmp_path: Path) -> None:
    sizes = [10, 0, 25, 7]
    files = []
    for i, size in enumerate(sizes):
        f = tmp_path / f"f{i}"
        f.write_bytes(b"x" * size)
        files.append(f)
    covered = [split for m in range(4) for split in nth_split(files, m, 4)]
    assert sum(s.length for s in covered) == sum(sizes)
    assert [(s.path.name, s.start, s.length) for s in nth_split(files, 1, 4)] == [
        ("f2", 0, 11)
    ]  # bytes [10, 21) of 42
    assert [(s.path.name, s.start) for s in nth_split(files, 0, 4)] == [("f0", 0)]
    assert [(s.path.name, s.start, s.length) for s in nth_split(files, 3, 4)] == [("f2", 21, 4), ("f3", 0, 7)]
