"""Data generators, map-only (Hadoop's RandomWriter, RandomTextWriter and TeraGen).

Each map writes its part of the job's output, ``part-m-NNNNN``. Output depends only on the job's seed and the
map's index, so a retried attempt writes exactly what the first one would have.

* ``randomtextwriter``: ``--bytes-per-map`` bytes of ``key<TAB>value`` lines, the key 5-10 and the value 20-100
  words drawn from a fixed 1,000-word vocabulary (input for wordcount and grep).
* ``randomwriter``: ``--bytes-per-map`` bytes of ``key<TAB>value`` lines of random letters, keys 10-1,000 and
  values 0-20,000 characters long, as RandomWriter's record sizes (text here, since every reader is
  line-based; input for sort).
* ``teragen``: ``--rows`` 100-byte GraySort records per map, rows ``[i*rows, (i+1)*rows)`` (input for
  terasort): a 10-byte printable key from a hash of the row number, two spaces, the row number in 32 hex
  digits, two spaces, 52 filler characters, CRLF.
"""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Callable

from mrworker.errors import UsageError
from mrworker.task import Sink, Task

_BATCH = 4096
_LETTERS = (string.ascii_letters + string.digits + "+/").encode()  # 64 symbols, no whitespace
_TO_LETTERS = bytes(_LETTERS[b % 64] for b in range(256))
_TO_PRINTABLE = bytes(32 + b % 95 for b in range(256))  # ' ' .. '~'


def vocabulary(size: int = 1000) -> list[bytes]:
    """A fixed list of distinct pronounceable words (the same in every process)."""
    rng = random.Random(20091)
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < size:
        syllables = rng.randint(1, 4)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables)))
    return sorted(w.encode() for w in words)


def _rng(task: Task) -> random.Random:
    return random.Random(task.seed * 1_000_003 + task.index)


def _write_until(task: Task, out: Sink, record: Callable[[], bytes]) -> None:
    if task.bytes_per_map <= 0:
        raise UsageError(f"{task.app} needs --bytes-per-map N, N > 0")
    written = 0
    while written < task.bytes_per_map:
        batch = [record() for _ in range(_BATCH)]
        # Stop at the first record that reaches the target, as RandomWriter does.
        for i, line in enumerate(batch):
            written += len(line)
            if written >= task.bytes_per_map:
                batch = batch[: i + 1]
                break
        out.write(b"".join(batch))
        task.counters.records_out += len(batch)


class RandomTextWriter:
    map_only = True
    reads_input = False

    def map(self, task: Task) -> None:
        rng, words = _rng(task), vocabulary()

        def record() -> bytes:
            key = b" ".join(rng.choices(words, k=rng.randint(5, 10)))
            value = b" ".join(rng.choices(words, k=rng.randint(20, 100)))
            return key + b"\t" + value + b"\n"

        task.commit_part(lambda out: _write_until(task, out, record), map_only=True)

    def reduce(self, task: Task) -> None:
        raise UsageError(f"{task.app} is map-only: it has no reduce")


class RandomWriter(RandomTextWriter):
    def map(self, task: Task) -> None:
        rng = _rng(task)

        def record() -> bytes:
            key = rng.randbytes(rng.randint(10, 1000)).translate(_TO_LETTERS)
            value = rng.randbytes(rng.randint(0, 20000)).translate(_TO_LETTERS)
            return key + b"\t" + value + b"\n"

        task.commit_part(lambda out: _write_until(task, out, record), map_only=True)


def tera_record(row: int, seed: int = 0) -> bytes:
    digest = hashlib.blake2b(row.to_bytes(8, "big"), digest_size=10, salt=seed.to_bytes(16, "big")).digest()
    filler = (b"%013X" % row) * 4
    return digest.translate(_TO_PRINTABLE) + b"  " + b"%032X" % row + b"  " + filler + b"\r\n"


class TeraGen(RandomTextWriter):
    def map(self, task: Task) -> None:
        if task.rows <= 0:
            raise UsageError("teragen needs --rows N (records per map), N > 0")
        first = task.index * task.rows

        def write(out: Sink) -> None:
            for start in range(first, first + task.rows, _BATCH):
                rows = range(start, min(start + _BATCH, first + task.rows))
                out.write(b"".join(tera_record(row, task.seed) for row in rows))
                task.counters.records_out += len(rows)

        task.commit_part(write, map_only=True)
