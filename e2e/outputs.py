"""Independent checks of what each example job of ``manifests/examples/*.yaml`` writes.

Every ``check_*`` function takes the job's output directory (and its input, and the parameters its example
YAML gives) and raises AssertionError, saying what is wrong, unless the output is what the job must write.
The expected answer is recomputed here with plain Python (and numpy where Python is too slow), never with
``mrworker``'s code: what is checked is the contract of ``workers/README.md``, not the worker's own logic.

What every job's output holds once ``commit-job`` has run (``workers/README.md``, "Data layout"): the part
files ``part-r-NNNNN`` (one per reduce) or, for map-only jobs (``reduces: 0``), ``part-m-NNNNN`` (one per
map), numbered from 00000; ``_JOB``, the claim, holding the job's UID; and ``_SUCCESS``, written last,
holding the same UID. Nothing else: no ``_temporary``. Records are lines ending in ``\\n``; inputs are the
visible files (names not starting with ``_`` or ``.``) of the input directory, in name order.

Inputs are large (256 MiB of text, 400 MB of TeraSort records), so files are read in chunks of whole lines
and handled as bytes; each check takes a few seconds at the examples' sizes.
"""

from __future__ import annotations

import math
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
import numpy.typing as npt

SUCCESS = "_SUCCESS"
JOB = "_JOB"
CHUNK_BYTES = 16 << 20

# randomtextwriter: key 5-10 words, value 20-100 words, separated by single spaces; words are 1-4
# consonant-vowel syllables of these letters, from a vocabulary of 1,000 (mrworker/apps/generators.py).
_CONSONANTS = b"bcdfghjklmnprstvz"
_VOWELS = b"aeiou"
_WORD = re.compile(rb"(?:[%s][%s]){1,4}" % (_CONSONANTS, _VOWELS))
_TEXT_BYTES = _CONSONANTS + _VOWELS + b" \t\n"
_KEY_WORDS, _VALUE_WORDS, _VOCABULARY = (5, 10), (20, 100), 1000

# randomwriter: key 10-1,000 and value 0-20,000 characters of a 64-letter alphabet.
_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_KEY_CHARS, _VALUE_CHARS = (10, 1000), (0, 20000)

# teragen: 100-byte GraySort records: a 10-byte printable key, two spaces, the row number in 32 hex digits, two
# spaces, the row's low 13 hex digits four times (52 filler bytes), CRLF.
TERA_RECORD, TERA_KEY = 100, 10
_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
_TERA_ROWS_AT_ONCE = 1 << 17

U8 = npt.NDArray[np.uint8]


# -- reading outputs and inputs -------------------------------------------------------------------------------


def _show(items: Sequence[object], most: int = 6) -> str:
    shown = ", ".join(map(str, items[:most]))
    return f"[{shown}{', ...' if len(items) > most else ''}] ({len(items)})"


def committed_parts(out: Path, kind: str, count: int | None = None) -> list[Path]:
    """The part files of a committed job's output, after checking the directory holds exactly what a finished
    job leaves: ``part-{kind}-00000`` .. ``part-{kind}-{count-1}``, ``_JOB`` and ``_SUCCESS`` (the same UID).
    ``count`` None: as many parts as there are, at least one, numbered without gaps."""
    assert out.is_dir(), f"{out}: the output directory does not exist"
    # Hidden names are left alone: staging names of the committer, .nfsXXXX files of a shared volume.
    names = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert SUCCESS in names, (
        f"{out}: no {SUCCESS}: the job was not committed (entries: {_show(sorted(names))})"
    )
    assert JOB in names, f"{out}: no {JOB}: the output was not claimed by a mrsched job"
    success, job = (out / SUCCESS).read_text().strip(), (out / JOB).read_text().strip()
    assert success == job, f"{out}: {SUCCESS} holds {success!r} but {JOB} holds {job!r}: another job's commit"
    parts = sorted(n for n in names if n.startswith("part-"))
    other = sorted(names - set(parts) - {SUCCESS, JOB})
    assert not other, f"{out}: unexpected entries besides the parts, {JOB} and {SUCCESS}: {_show(other)}"
    if count is None:
        count = len(parts)
        assert count >= 1, f"{out}: no part files"
    expected = [f"part-{kind}-{i:05d}" for i in range(count)]
    assert parts == expected, f"{out}: part files {_show(parts)}, expected {_show(expected)}"
    for name in expected:
        assert (out / name).is_file(), f"{out / name} is not a file"
    return [out / name for name in expected]


def input_files(path: Path) -> list[Path]:
    """A job's input files: ``path`` itself, or the visible files under it, recursively, in name order."""
    if path.is_file():
        return [path]
    assert path.is_dir(), f"input {path} does not exist"
    files: list[Path] = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        files.extend(Path(root) / n for n in sorted(names) if not n.startswith(("_", ".")))
    assert files, f"no input files under {path}"
    return files


def chunks(files: Iterable[Path], size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The files' bytes in pieces of whole lines: each piece ends with a newline, but for a file's last line
    when it has none. A line never spans two pieces (nor two files)."""
    for path in files:
        with open(path, "rb") as f:
            while block := f.read(size):
                if not block.endswith(b"\n"):
                    block += f.readline()  # the rest of the last line (none at the end of the file)
                yield block


def lines_of(chunk: bytes) -> list[bytes]:
    """A piece's lines without their newline (a last line without one counts)."""
    if not chunk:
        return []
    lines = chunk.split(b"\n")
    if chunk.endswith(b"\n"):
        lines.pop()
    return lines


def _all_lines(files: Iterable[Path]) -> list[bytes]:
    lines: list[bytes] = []
    for chunk in chunks(files):
        lines += lines_of(chunk)
    return lines


def _first_unsorted(lines: Sequence[bytes]) -> int | None:
    """The first ``i`` with ``lines[i] > lines[i + 1]``; None when the lines are in (byte) order."""
    if all(map(bytes.__le__, lines, lines[1:])):  # C speed; the loop below only finds where
        return None
    return next(i for i in range(len(lines) - 1) if lines[i] > lines[i + 1])


def _first_difference(a: Sequence[bytes], b: Sequence[bytes]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _clip(data: bytes, most: int = 80) -> str:
    return repr(data if len(data) <= most else data[:most] + b"...")


def read_counts(parts: Sequence[Path]) -> Counter[bytes]:
    """``key<TAB>count`` part files (wordcount, grep) as a Counter, checking that each part's keys are sorted
    and distinct, that no key is in two parts and that every count is a positive integer."""
    counts: Counter[bytes] = Counter()
    where: dict[bytes, str] = {}
    for part in parts:
        data = part.read_bytes()
        assert not data or data.endswith(b"\n"), f"{part}: the last line has no newline"
        previous: bytes | None = None
        for number, line in enumerate(lines_of(data), 1):
            key, tab, value = line.rpartition(b"\t")
            assert tab and value.isdigit() and int(value) > 0, (
                f"{part}:{number}: {_clip(line)} is not key<TAB>count with a positive count"
            )
            assert previous is None or previous < key, (
                f"{part}:{number}: key {_clip(key)} comes after {_clip(previous)}: keys not sorted or repeated"
            )
            assert key not in where, f"{part}:{number}: key {_clip(key)} is in {where[key]} too"
            where[key] = part.name
            counts[key] = int(value)
            previous = key
    return counts


def _compare_counts(expected: Counter[bytes], got: Counter[bytes], what: str) -> None:
    """Raise AssertionError, with examples of each kind of difference, unless the counts are equal."""
    if got == expected:
        return
    missing = sorted(k for k in expected if k not in got)
    extra = sorted(k for k in got if k not in expected)
    wrong = sorted(k for k in expected if k in got and got[k] != expected[k])
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing, e.g. " + ", ".join(_clip(k) for k in missing[:5]))
    if extra:
        problems.append(f"{len(extra)} not in the input, e.g. " + ", ".join(_clip(k) for k in extra[:5]))
    if wrong:
        problems.append(
            f"{len(wrong)} with a wrong count, e.g. "
            + ", ".join(f"{_clip(k)}: {got[k]} instead of {expected[k]}" for k in wrong[:5])
        )
    raise AssertionError(
        f"{what} counts differ from a recount of the input (distinct {what}: {len(expected)}, "
        f"{expected.total()} in all; the output has {len(got)}, {got.total()} in all): " + "; ".join(problems)
    )


# -- generators -----------------------------------------------------------------------------------------------


def _check_generated_sizes(parts: Sequence[Path], bytes_per_map: int) -> None:
    """A generator map writes whole records until it reaches ``bytes_per_map``: at least that much, and less
    before its last record."""
    for part in parts:
        size = part.stat().st_size
        assert size >= bytes_per_map, f"{part}: {size} bytes, less than bytesPerMap {bytes_per_map}"
        with open(part, "rb") as f:
            f.seek(max(0, size - 2 * _VALUE_CHARS[1] - 2 * _KEY_CHARS[1]))
            tail = f.read()
        assert tail.endswith(b"\n"), f"{part}: the last record has no newline"
        last = len(tail) - tail.rfind(b"\n", 0, len(tail) - 1) - 1
        assert size - last < bytes_per_map, (
            f"{part}: {size} bytes: it went on writing after reaching bytesPerMap {bytes_per_map} "
            f"(its last record is {last} bytes)"
        )
    heads: dict[bytes, str] = {}
    for part in parts:
        with open(part, "rb") as f:
            head = f.read(4096)
        assert head not in heads, f"{part} starts like {heads[head]}: the maps did not draw different records"
        heads[head] = part.name


def _bad_byte(part: Path, offset: int, chunk: bytes, allowed: bytes) -> str:
    i = next(i for i, b in enumerate(chunk) if b not in allowed)
    start = chunk.rfind(b"\n", 0, i) + 1
    return f"{part}: byte {chr(chunk[i])!r} at offset {offset + i} in line {_clip(chunk[start : i + 40])}"


def check_randomtextwriter(out: Path, maps: int, bytes_per_map: int) -> None:
    """``maps`` parts ``part-m-NNNNN`` of ``key<TAB>value`` lines, each just over ``bytes_per_map``; keys of 5-10
    and values of 20-100 words separated by single spaces, the words of a vocabulary of at most 1,000
    pronounceable words (consonant-vowel syllables); every map's data different."""
    parts = committed_parts(out, "m", maps)
    _check_generated_sizes(parts, bytes_per_map)
    (k_lo, k_hi), (v_lo, v_hi) = _KEY_WORDS, _VALUE_WORDS
    words: set[bytes] = set()
    for part in parts:
        offset, number = 0, 0
        for chunk in chunks([part]):
            if chunk.translate(None, _TEXT_BYTES):
                raise AssertionError(_bad_byte(part, offset, chunk, _TEXT_BYTES))
            for line in lines_of(chunk):
                number += 1
                key, tab, value = line.partition(b"\t")
                if not (
                    tab
                    and k_lo - 1 <= key.count(b" ") <= k_hi - 1
                    and v_lo - 1 <= value.count(b" ") <= v_hi - 1
                    and b"\t" not in value
                ):
                    raise AssertionError(
                        f"{part}:{number}: {_clip(line)} is not key<TAB>value with {k_lo}-{k_hi} key words "
                        f"and {v_lo}-{v_hi} value words"
                    )
            split = chunk.split()
            words.update(split)
            # Every word followed by one separator (the last line's maybe by none): no empty words.
            separators = chunk.count(b" ") + chunk.count(b"\t") + chunk.count(b"\n")
            assert len(split) == separators + (not chunk.endswith(b"\n")), (
                f"{part}: empty words (double, leading or trailing spaces) after offset {offset}"
            )
            offset += len(chunk)
    bad = sorted(w for w in words if not _WORD.fullmatch(w))
    assert not bad, f"{out}: words not made of consonant-vowel syllables: {_show([_clip(w) for w in bad])}"
    assert len(words) <= _VOCABULARY, (
        f"{out}: {len(words)} distinct words, more than the {_VOCABULARY} of the vocabulary"
    )


def check_randomwriter(out: Path, maps: int, bytes_per_map: int) -> None:
    """``maps`` parts ``part-m-NNNNN`` of ``key<TAB>value`` lines, each just over ``bytes_per_map``; keys of
    10-1,000 and values of 0-20,000 characters of ``A-Za-z0-9+/``; every map's data different."""
    parts = committed_parts(out, "m", maps)
    _check_generated_sizes(parts, bytes_per_map)
    allowed = _LETTERS + b"\t\n"
    (k_lo, k_hi), (v_lo, v_hi) = _KEY_CHARS, _VALUE_CHARS
    for part in parts:
        offset, number = 0, 0
        for chunk in chunks([part]):
            if chunk.translate(None, allowed):
                raise AssertionError(_bad_byte(part, offset, chunk, allowed))
            for line in lines_of(chunk):
                number += 1
                key, tab, value = line.partition(b"\t")
                if not (
                    tab and k_lo <= len(key) <= k_hi and v_lo <= len(value) <= v_hi and b"\t" not in value
                ):
                    raise AssertionError(
                        f"{part}:{number}: {_clip(line)} is not key<TAB>value with a {k_lo}-{k_hi} character key "
                        f"and a {v_lo}-{v_hi} character value ({len(key)} and {len(value)} here)"
                    )
            offset += len(chunk)


def _tera_tails(first: int, count: int) -> U8:
    """Bytes 10-99 of records ``first`` .. ``first + count - 1``: what follows the key."""
    rows = np.arange(first, first + count, dtype=np.uint64)
    shifts = np.arange(31, -1, -1, dtype=np.uint64) * np.uint64(4)
    digits: U8 = _HEX[(rows[:, None] >> shifts) & np.uint64(15)]  # 32 hex digits, most significant first
    tails = np.empty((count, TERA_RECORD - TERA_KEY), dtype=np.uint8)
    tails[:, 0:2] = ord(" ")
    tails[:, 2:34] = digits
    tails[:, 34:36] = ord(" ")
    tails[:, 36:88] = np.tile(digits[:, 32 - 13 :], 4)
    tails[:, 88] = ord("\r")
    tails[:, 89] = ord("\n")
    return tails


def check_teragen(out: Path, rows: int, *, maps: int | None = None) -> None:
    """Parts ``part-m-NNNNN`` (``maps`` of them; default: as many as there are) of ``rows`` 100-byte GraySort
    records each (``rows`` is per map, as in teragen.yaml): part ``i`` holds rows ``i*rows`` .. in order, each
    a 10-byte printable key, two spaces, the row number in 32 hex digits, two spaces, its low 13 hex digits
    four times, CRLF. Keys are (pseudo-random and) practically all distinct."""
    parts = committed_parts(out, "m", maps)
    keys: list[U8] = []
    for i, part in enumerate(parts):
        size = part.stat().st_size
        assert size == rows * TERA_RECORD, (
            f"{part}: {size} bytes, not {rows} records of {TERA_RECORD} bytes ({size / TERA_RECORD:g} records)"
        )
        with open(part, "rb") as f:
            for start in range(0, rows, _TERA_ROWS_AT_ONCE):
                count = min(_TERA_ROWS_AT_ONCE, rows - start)
                records = np.frombuffer(f.read(count * TERA_RECORD), dtype=np.uint8).reshape(
                    count, TERA_RECORD
                )
                first = i * rows + start
                bad_tail = np.flatnonzero((records[:, TERA_KEY:] != _tera_tails(first, count)).any(axis=1))
                key = records[:, :TERA_KEY]
                bad_key = np.flatnonzero(((key < 32) | (key > 126)).any(axis=1))
                if bad_tail.size or bad_key.size:
                    r = int(min(bad_tail[:1].tolist() + bad_key[:1].tolist()))
                    expected = _tera_tails(first + r, 1).tobytes()
                    raise AssertionError(
                        f"{part}: record {start + r} (row {first + r}) is {records[r].tobytes()!r}, expected "
                        f"a 10-byte printable key then {expected!r}"
                    )
                keys.append(key.copy())
    if keys:
        every = np.concatenate(keys)
        repeated = _repeated_keys(every)
        assert repeated <= len(every) // 100_000, (
            f"{out}: {repeated} repeated keys among {len(every)} records: the keys are not random"
        )


def _repeated_keys(keys: U8) -> int:
    """How many of the rows of ``keys`` (n by 10 bytes) repeat an earlier row."""
    head = np.ascontiguousarray(keys[:, :8]).view(np.uint64).ravel()  # collisions of 8 bytes are rare...
    ordered = np.sort(head)
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return 0
    suspects = [k.tobytes() for k in keys[np.isin(head, ordered[1:][same])]]  # ...so compare those whole
    return len(suspects) - len(set(suspects))


# -- jobs over text ---------------------------------------------------------------------------------------------


def check_wordcount(text: Path, out: Path, reduces: int) -> None:
    """``reduces`` parts ``part-r-NNNNN`` of ``word<TAB>count``, each sorted by word, no word in two parts;
    together exactly the counts of the words (split on ASCII whitespace) of the input ``text``."""
    got = read_counts(committed_parts(out, "r", reduces))
    expected: Counter[bytes] = Counter()
    for chunk in chunks(input_files(text)):
        expected.update(chunk.split())
    _compare_counts(expected, got, "word")


def check_grep(text: Path, out: Path, pattern: str) -> None:
    """Parts ``part-r-NNNNN`` of ``match<TAB>count``, each sorted by match, no match in two parts; together
    exactly the counts of every match (the whole match, group 0) of ``pattern`` (Python ``re``, over bytes)
    in each line of the input ``text``."""
    got = read_counts(committed_parts(out, "r"))
    regex = re.compile(pattern.encode())
    expected: Counter[bytes] = Counter()
    for chunk in chunks(input_files(text)):
        if regex.groups == 0:
            for line in lines_of(chunk):
                expected.update(regex.findall(line))
        else:
            for line in lines_of(chunk):
                expected.update(m.group(0) for m in regex.finditer(line))
    _compare_counts(expected, got, "match")


def check_jio(text: Path, out: Path, output_factor: int) -> None:
    """Parts ``part-m-NNNNN`` holding every input line (``\\n``, ``\\r`` or CRLF ends a line) stripped of
    trailing whitespace and upper-cased, ``output_factor`` times, and nothing else; in input order: the
    distinct lines, in the order they first appear, are the same in the output as in the input (true however
    a map groups its repetitions: line by line, block by block or its whole split)."""
    parts = committed_parts(out, "m")
    expected: Counter[bytes] = Counter()
    for chunk in chunks(input_files(text)):
        expected.update(line.rstrip().upper() for line in chunk.splitlines())
    got: Counter[bytes] = Counter()
    for part in parts:
        last = b""
        for chunk in chunks([part]):
            got.update(lines_of(chunk))
            last = chunk
        assert not last or last.endswith(b"\n"), f"{part}: the last line has no newline"
    if got != Counter({line: n * output_factor for line, n in expected.items()}):
        wrong = [k for k in expected if got.get(k, 0) != expected[k] * output_factor]
        extra = [k for k in got if k not in expected]
        problems = []
        if wrong:
            problems.append(
                f"{len(wrong)} transformed input lines with another count, e.g. "
                + ", ".join(f"{_clip(k)} {got.get(k, 0)} times" for k in wrong[:3])
            )
        if extra:
            problems.append(
                f"{len(extra)} lines not from the input, e.g. " + ", ".join(map(_clip, extra[:3]))
            )
        raise AssertionError(
            f"{out}: not every transformed input line {output_factor} times ({expected.total()} input lines, "
            f"{got.total()} output lines): " + "; ".join(problems)
        )
    order_in, order_out = list(expected), list(got)
    if order_in != order_out:
        i = _first_difference(order_in, order_out)
        raise AssertionError(
            f"{out}: lines out of input order: distinct line number {i + 1} of the output, in order of first "
            f"appearance, is {_clip(order_out[i])}; of the input, {_clip(order_in[i])}"
        )


# -- pi ------------------------------------------------------------------------------------------------------------


def _radical_inverse(n: npt.NDArray[np.int64], base: int, digits: int) -> npt.NDArray[np.int64]:
    """The van der Corput radical inverse of ``n`` in ``base``, times ``base ** digits`` (an exact integer)."""
    inverse = np.zeros_like(n)
    rest = n.copy()
    for k in range(digits):
        inverse += (rest % base) * base ** (digits - 1 - k)
        rest //= base
    assert not rest.any()
    return inverse


def halton_inside(first: int, count: int, band: float = 0.0) -> tuple[int, int]:
    """Of the 2-D Halton points (bases 2 and 3) with indices ``first`` .. ``first + count - 1``: how many lie in
    the disc of radius 1/2 centred in the unit square (boundary included), decided exactly; and how many lie
    within ``band`` of its boundary (in squared distance from the centre)."""
    inside = near = 0
    step = 1 << 20
    for lo in range(first, first + count, step):
        n = np.arange(lo, min(lo + step, first + count), dtype=np.int64)
        d2 = max(1, int(n[-1])).bit_length()  # 2 ** d2 > every index: x = a / 2 ** d2 exactly
        d3 = 1
        while 3**d3 <= int(n[-1]):
            d3 += 1
        a, b = _radical_inverse(n, 2, d2), _radical_inverse(n, 3, d3)
        x, y = a / float(2**d2), b / float(3**d3)
        d = (x - 0.5) ** 2 + (y - 0.5) ** 2  # within 1e-15 of the exact value
        inside += int(np.count_nonzero(d < 0.25 - 1e-13))
        # Points near the boundary: decided with integers, (2a - D2)^2 D3^2 + (2b - D3)^2 D2^2 <= D2^2 D3^2.
        close = np.flatnonzero(np.abs(d - 0.25) <= max(band, 0.0) + 1e-13)
        big2, big3 = 2**d2, 3**d3
        for i in close.tolist():
            ai, bi = int(a[i]), int(b[i])
            excess = (2 * ai - big2) ** 2 * big3**2 + (2 * bi - big3) ** 2 * big2**2 - big2**2 * big3**2
            if excess <= 0 and d[i] >= 0.25 - 1e-13:  # inside, and not counted above
                inside += 1
            if abs(excess) <= band * 4 * big2**2 * big3**2:  # |distance² - 1/4| <= band
                near += 1
    return inside, near


def check_pi(out: Path, maps: int, samples: int) -> None:
    """One part ``part-r-00000`` of ``pi``, ``inside``, ``outside``, ``samples`` lines (``name<TAB>value``):
    ``samples`` = ``maps * samples``, inside + outside = samples, pi = 4 inside / samples, and ``inside`` the
    number of the Halton points 1 .. maps*samples (bases 2 and 3; map ``i`` takes ``1 + i*samples`` on) in the
    disc inscribed in the unit square.

    The expected count is computed here from the definition of the Halton sequence (radical inverses as exact
    integers, the circle test in integers wherever floating point could be wrong), so no statistical tolerance
    is needed. The only slack is the worker's own floating point: it steps each map's points from an exact
    start with additions and subtractions of digit weights, fewer than ``4 * samples + 256`` of them, each off
    by at most 2**-53, so a point whose squared distance from the centre is within ``(4 * samples + 256) *
    2**-51`` of 1/4 (both coordinates' drift, with room to spare) could fall either way. ``inside`` may
    differ from the exact count by at most the number of such points, and there are almost never any (none
    for 8 maps of 1,000,000): the count is then checked exactly. (The estimate itself is 3.141598 there,
    5.3e-6 above pi: the method's error, not a tolerance.)"""
    (part,) = committed_parts(out, "r", 1)
    data = part.read_text()
    rows = [line.split("\t") for line in data.splitlines()]
    names = [r[0] for r in rows]
    assert (
        data.endswith("\n")
        and names == ["pi", "inside", "outside", "samples"]
        and {len(r) for r in rows} == {2}
    ), f"{part}: expected the lines pi, inside, outside, samples as name<TAB>value, got {data!r}"
    values = dict(rows)
    inside, outside, total = int(values["inside"]), int(values["outside"]), int(values["samples"])
    assert total == maps * samples, f"{part}: samples {total}, expected maps * samples = {maps * samples}"
    assert inside >= 0 and outside >= 0 and inside + outside == total, (
        f"{part}: inside {inside} + outside {outside} is not samples {total}"
    )
    with localcontext() as ctx:
        ctx.prec = 40
        estimate, exact_ratio = Decimal(values["pi"]), Decimal(4 * inside) / Decimal(total)
        assert abs(estimate - exact_ratio) <= Decimal(10) ** -18 * 4, (
            f"{part}: pi {values['pi']} is not 4 * inside / samples = {exact_ratio}"
        )
    band = (4 * samples + 256) * 2.0**-53 * 4  # x and y drift; |d(distance²)| <= |dx| + |dy| (+ rounding)
    expected, near = halton_inside(1, maps * samples, band)
    assert abs(inside - expected) <= near, (
        f"{part}: inside {inside}, but {expected} of the Halton points 1..{maps * samples} lie in the disc "
        f"({near} of them within floating-point reach of the circle); pi would be "
        f"{4 * expected / total!r} (math.pi {math.pi!r})"
    )


# -- sorting ---------------------------------------------------------------------------------------------------


def _part_lines(part: Path) -> list[bytes]:
    """A sorted part's records, checking it ends with a newline and its records are in byte order."""
    lines: list[bytes] = []
    last = b""
    for chunk in chunks([part]):
        lines += lines_of(chunk)
        last = chunk
    assert not last or last.endswith(b"\n"), f"{part}: the last record has no newline"
    i = _first_unsorted(lines)
    if i is not None:
        raise AssertionError(
            f"{part}: not sorted: record {i} ({_clip(lines[i])}) is greater than record {i + 1} "
            f"({_clip(lines[i + 1])})"
        )
    return lines


def _check_permutation(inputs: list[bytes], outputs: list[bytes], out: Path) -> None:
    """``outputs`` (sorted) holds exactly the records of ``inputs`` (sorted in place here)."""
    inputs.sort()
    if inputs != outputs:
        i = _first_difference(inputs, outputs)
        missing = inputs[i] if i < len(inputs) else None
        extra = outputs[i] if i < len(outputs) else None
        raise AssertionError(
            f"{out}: the output is not a permutation of the input ({len(inputs)} records in, {len(outputs)} out): "
            f"in sorted order they first differ at record {i}: input {_clip(missing or b'-')}, "
            f"output {_clip(extra or b'-')}"
        )


def check_sort(random: Path, out: Path, reduces: int) -> None:
    """``reduces`` parts ``part-r-NNNNN``, each sorted by the records' bytes; together a permutation of the
    input records (lines). Sort partitions by hash, not by range (``workers/README.md``: CRC-32 of the
    record modulo the reduces, Hadoop's HashPartitioner): a record is in part ``crc32(record) % reduces``, so
    the parts are not in global order (only terasort's are)."""
    parts = committed_parts(out, "r", reduces)
    outputs: list[bytes] = []
    for r, part in enumerate(parts):
        lines = _part_lines(part)
        if reduces > 1:
            for j, line in enumerate(lines):
                if zlib.crc32(line) % reduces != r:
                    raise AssertionError(
                        f"{part}: record {j} ({_clip(line)}) belongs in part {zlib.crc32(line) % reduces} "
                        f"(CRC-32 % {reduces}), not {r}"
                    )
        outputs += lines
    outputs.sort()  # merges the sorted parts (Timsort finds the runs)
    _check_permutation(_all_lines(input_files(random)), outputs, out)


def check_terasort(tera_in: Path, out: Path, reduces: int) -> None:
    """``reduces`` parts ``part-r-NNNNN`` that, concatenated in order, are the input records (lines) sorted by
    their bytes: each part sorted, each part's last record no greater than the next part's first, and
    together a permutation of the input."""
    parts = committed_parts(out, "r", reduces)
    outputs: list[bytes] = []
    for part in parts:
        lines = _part_lines(part)
        if outputs and lines:
            assert outputs[-1] <= lines[0], (
                f"{part}: its first record {_clip(lines[0])} sorts before the previous part's last "
                f"{_clip(outputs[-1])}: the parts are not in total order"
            )
        outputs += lines
    _check_permutation(_all_lines(input_files(tera_in)), outputs, out)
