"""The end-to-end output checks (``e2e/outputs.py``) against real worker runs of every example application at
small scale: each check passes on the real output and fails on a corrupted copy of it."""

from __future__ import annotations

import shutil
from bisect import insort
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e import outputs

from tests.workers.image import Worker

TEXT_MAPS, TEXT_BYTES = 2, 150_000
RANDOM_MAPS, RANDOM_BYTES = 2, 300_000
TERA_MAPS, TERA_ROWS = 2, 5_000
PI_MAPS, PI_SAMPLES = 3, 4_000
EXAMPLE_PATTERN = "ba[a-z]*"  # grep.yaml's
PATTERN = "(b|d)a[a-z]*ko"  # "dako" is one of its words; a group, and group 0 is what counts
FACTOR = 3
WORDCOUNT_REDUCES, SORT_REDUCES, TERASORT_REDUCES = 2, 3, 3


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every example job, run by real worker processes (generators first), on one data volume."""
    worker = Worker(tmp_path_factory.mktemp("data"), tmp_path_factory.mktemp("scratch"))
    small = ["--sort-buffer-mb", "1"]  # the maps spill and merge, as large inputs make them
    worker.job(
        "randomtextwriter",
        maps=TEXT_MAPS,
        reduces=0,
        output="text",
        args=["--bytes-per-map", str(TEXT_BYTES), "--seed", "1"],
    )
    worker.job(
        "randomwriter",
        maps=RANDOM_MAPS,
        reduces=0,
        output="random",
        args=["--bytes-per-map", str(RANDOM_BYTES), "--seed", "1"],
    )
    worker.job("teragen", maps=TERA_MAPS, reduces=0, output="tera-in", args=["--rows", str(TERA_ROWS)])
    worker.job(
        "wordcount", maps=3, reduces=WORDCOUNT_REDUCES, output="wordcount", args=["--input", "text", *small]
    )
    worker.job("grep", maps=2, reduces=1, output="grep", args=["--input", "text", "--pattern", PATTERN])
    worker.job(
        "grep",
        maps=2,
        reduces=1,
        output="grep-example",
        args=["--input", "text", "--pattern", EXAMPLE_PATTERN],
    )
    worker.job(
        "jio", maps=2, reduces=0, output="jio", args=["--input", "text", "--output-factor", str(FACTOR)]
    )
    worker.job("pi", maps=PI_MAPS, reduces=1, output="pi", args=["--samples", str(PI_SAMPLES)])
    worker.job("sort", maps=2, reduces=SORT_REDUCES, output="sorted", args=["--input", "random", *small])
    worker.job(
        "terasort", maps=2, reduces=TERASORT_REDUCES, output="tera-out", args=["--input", "tera-in", *small]
    )
    return worker.data


# Each check as it would be called on a job's output directory, the inputs read from ``data``.
Check = Callable[[Path, Path], None]
CHECKS: dict[str, tuple[str, Check]] = {
    "randomtextwriter": (
        "text",
        lambda data, out: outputs.check_randomtextwriter(out, TEXT_MAPS, TEXT_BYTES),
    ),
    "randomwriter": ("random", lambda data, out: outputs.check_randomwriter(out, RANDOM_MAPS, RANDOM_BYTES)),
    "teragen": ("tera-in", lambda data, out: outputs.check_teragen(out, TERA_ROWS, maps=TERA_MAPS)),
    "wordcount": (
        "wordcount",
        lambda data, out: outputs.check_wordcount(data / "text", out, WORDCOUNT_REDUCES),
    ),
    "grep": ("grep", lambda data, out: outputs.check_grep(data / "text", out, PATTERN)),
    "grep-example": (
        "grep-example",
        lambda data, out: outputs.check_grep(data / "text", out, EXAMPLE_PATTERN),
    ),
    "jio": ("jio", lambda data, out: outputs.check_jio(data / "text", out, FACTOR)),
    "pi": ("pi", lambda data, out: outputs.check_pi(out, PI_MAPS, PI_SAMPLES)),
    "sort": ("sorted", lambda data, out: outputs.check_sort(data / "random", out, SORT_REDUCES)),
    "terasort": (
        "tera-out",
        lambda data, out: outputs.check_terasort(data / "tera-in", out, TERASORT_REDUCES),
    ),
}


@pytest.mark.parametrize("app", sorted(CHECKS))
def test_check_passes_on_the_real_output(data: Path, app: str) -> None:
    output, check = CHECKS[app]
    check(data, data / output)


def test_the_outputs_are_not_trivial(data: Path) -> None:
    assert outputs.read_counts([data / "grep" / "part-r-00000"]), f"{PATTERN} matches something"
    assert outputs.read_counts([data / "grep-example" / "part-r-00000"]), (
        f"{EXAMPLE_PATTERN} matches something"
    )
    sizes = [(data / "tera-out" / f"part-r-{r:05d}").stat().st_size for r in range(TERASORT_REDUCES)]
    assert min(sizes) > 0, f"every terasort reduce got records: {sizes}"


# -- corruptions ------------------------------------------------------------------------------------------------


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def write(path: Path, records: list[bytes]) -> None:
    path.write_bytes(b"".join(r + b"\n" for r in records))


def edit(path: Path, change: Callable[[list[bytes]], None]) -> None:
    records = lines(path)
    change(records)
    write(path, records)


def drop(index: int) -> Callable[[list[bytes]], None]:
    def change(records: list[bytes]) -> None:
        del records[index]

    return change


def swap_across(a: Path, i: int, b: Path, j: int) -> None:
    """Exchange record ``i`` of ``a`` and record ``j`` of ``b`` (the same multiset of records overall)."""
    ra, rb = lines(a), lines(b)
    assert ra[i] != rb[j]
    ra[i], rb[j] = rb[j], ra[i]
    write(a, ra)
    write(b, rb)


def replace_line(index: int, old: bytes, new: bytes) -> Callable[[list[bytes]], None]:
    def change(records: list[bytes]) -> None:
        assert old in records[index]
        records[index] = records[index].replace(old, new, 1)

    return change


def bump_count(index: int, by: int = 1) -> Callable[[list[bytes]], None]:
    def change(records: list[bytes]) -> None:
        key, _, count = records[index].rpartition(b"\t")
        records[index] = b"%s\t%d" % (key, int(count) + by)

    return change


def duplicate_previous(index: int) -> Callable[[list[bytes]], None]:
    """Replace a record with its predecessor: still sorted, still in its partition, no longer a permutation."""

    def change(records: list[bytes]) -> None:
        assert records[index - 1] != records[index]
        records[index] = records[index - 1]

    return change


def swap_adjacent(index: int) -> Callable[[list[bytes]], None]:
    def change(records: list[bytes]) -> None:
        records[index], records[index + 1] = records[index + 1], records[index]

    return change


def tera_edit(part: str, record: int, at: int, value: bytes) -> Callable[[Path], None]:
    def corrupt(out: Path) -> None:
        path = out / part
        data = bytearray(path.read_bytes())
        data[record * 100 + at : record * 100 + at + len(value)] = value
        path.write_bytes(bytes(data))

    return corrupt


def tera_same_keys(out: Path) -> None:
    path = out / "part-m-00000"
    data = bytearray(path.read_bytes())
    for r in range(0, len(data), 100):
        data[r : r + 10] = b"AAAAAAAAAA"
    path.write_bytes(bytes(data))


def tera_swap_records(out: Path) -> None:
    path = out / "part-m-00000"
    data = path.read_bytes()
    path.write_bytes(data[:1000] + data[1100:1200] + data[1000:1100] + data[1200:])


def pi_inside_moved(out: Path) -> None:
    """One point moved from outside to inside, with pi recomputed: consistent, but not the Halton count."""
    path = out / "part-r-00000"
    values = dict(line.split("\t") for line in path.read_text().splitlines())
    inside, total = int(values["inside"]) + 1, int(values["samples"])
    pi = 4 * inside / total
    path.write_text(f"pi\t{pi}\ninside\t{inside}\noutside\t{total - inside}\nsamples\t{total}\n")


def part(name: str, change: Callable[[list[bytes]], None]) -> Callable[[Path], None]:
    return lambda out: edit(out / name, change)


def across(a: str, i: int, b: str, j: int) -> Callable[[Path], None]:
    return lambda out: swap_across(out / a, i, out / b, j)


def remove(name: str) -> Callable[[Path], None]:
    return lambda out: (out / name).unlink()


def copy_over(source: str, target: str) -> Callable[[Path], None]:
    return lambda out: shutil.copyfile(out / source, out / target)


def add_file(name: str) -> Callable[[Path], None]:
    return lambda out: (out / name).write_bytes(b"")


def text_replace(name: str, old: bytes, new: bytes) -> Callable[[Path], None]:
    def corrupt(out: Path) -> None:
        data = (out / name).read_bytes()
        assert old in data
        (out / name).write_bytes(data.replace(old, new, 1))

    return corrupt


M0, M1, R0, R1 = "part-m-00000", "part-m-00001", "part-r-00000", "part-r-00001"
CORRUPTIONS: list[tuple[str, str, Callable[[Path], None]]] = [
    # Any output: the commit's marks and the part files.
    ("wordcount", "no _SUCCESS", remove("_SUCCESS")),
    ("wordcount", "a part missing", remove(R1)),
    ("teragen", "a part missing", remove(M1)),
    ("jio", "a stray file", add_file("part-m-00002.tmp")),
    ("sort", "_SUCCESS of another job", lambda out: (out / "_SUCCESS").write_text("someone-else\n")),
    # Generators.
    ("randomtextwriter", "last record dropped", part(M1, drop(-1))),
    ("randomtextwriter", "a word not of the vocabulary's letters", part(M0, replace_line(3, b" ", b" qux "))),
    ("randomtextwriter", "a record without a tab", part(M0, replace_line(5, b"\t", b" "))),
    ("randomtextwriter", "a double space", part(M1, replace_line(7, b" ", b"  "))),
    ("randomtextwriter", "both maps wrote the same", copy_over(M0, M1)),
    ("randomwriter", "last record dropped", part(M0, drop(-1))),
    ("randomwriter", "a character outside the alphabet", text_replace(M1, b"A", b"!")),
    ("randomwriter", "a record without a tab", part(M0, replace_line(2, b"\t", b"A"))),
    ("teragen", "record dropped", part(M0, drop(17))),
    ("teragen", "two records swapped", tera_swap_records),
    ("teragen", "a row number changed", tera_edit(M1, 42, 40, b"F")),
    ("teragen", "a key not printable", tera_edit(M0, 3, 2, b"\x01")),
    ("teragen", "CRLF lost", tera_edit(M1, 8, 98, b"\n\n")),
    ("teragen", "every key the same", tera_same_keys),
    # Jobs over text.
    ("wordcount", "one count changed", part(R0, bump_count(10))),
    ("wordcount", "one word dropped", part(R1, drop(0))),
    ("wordcount", "a part unsorted", part(R0, swap_adjacent(4))),
    (
        "wordcount",
        "a word in two parts",
        lambda out: edit(out / R1, lambda r: insort(r, lines(out / R0)[-1])),
    ),
    ("grep", "one count changed", part(R0, bump_count(0))),
    ("grep", "one match dropped", part(R0, drop(-1))),
    ("grep", "a match invented", part(R0, lambda r: insort(r, b"bazzzzko\t1"))),
    ("jio", "a line not upper-cased", part(M1, lambda r: r.__setitem__(5, r[5].lower()))),
    ("jio", "a line dropped", part(M0, drop(100))),
    ("jio", "lines swapped across parts", across(M0, 0, M1, 0)),
    ("pi", "inside off by one", pi_inside_moved),
    ("pi", "pi not 4 inside / samples", text_replace(R0, b"pi\t3.1", b"pi\t3.2")),
    ("pi", "samples wrong", text_replace(R0, b"samples\t", b"samples\t1")),
    # Sorting.
    ("sort", "a record dropped", part(R1, drop(3))),
    ("sort", "records swapped across parts", across(R0, 0, R1, 0)),
    ("sort", "a part unsorted", part(R0, swap_adjacent(0))),
    ("sort", "a record duplicated over another", part(R0, duplicate_previous(-1))),
    ("terasort", "a record dropped", part(R1, drop(-1))),
    ("terasort", "records swapped across parts", across(R0, -1, R1, 0)),
    ("terasort", "a part unsorted", part(R1, swap_adjacent(10))),
    ("terasort", "a record duplicated over another", part(R0, duplicate_previous(7))),
]


@pytest.mark.parametrize(
    ("app", "corrupt"),
    [(app, corrupt) for app, _, corrupt in CORRUPTIONS],
    ids=[f"{app}-{what.replace(' ', '-')}" for app, what, _ in CORRUPTIONS],
)
def test_check_fails_on_a_corrupted_output(
    data: Path, tmp_path: Path, app: str, corrupt: Callable[[Path], None]
) -> None:
    output, check = CHECKS[app]
    copy = tmp_path / output
    shutil.copytree(data / output, copy)
    check(data, copy)  # the copy is intact
    corrupt(copy)
    with pytest.raises(AssertionError):
        check(data, copy)


@pytest.mark.parametrize(
    "call",
    [
        lambda data: outputs.check_randomtextwriter(data / "text", TEXT_MAPS + 1, TEXT_BYTES),
        lambda data: outputs.check_randomtextwriter(data / "text", TEXT_MAPS, TEXT_BYTES // 2),
        lambda data: outputs.check_randomwriter(data / "random", RANDOM_MAPS, RANDOM_BYTES * 2),
        lambda data: outputs.check_teragen(data / "tera-in", TERA_ROWS + 1),
        lambda data: outputs.check_wordcount(data / "text", data / "wordcount", WORDCOUNT_REDUCES + 1),
        lambda data: outputs.check_grep(data / "text", data / "grep", "(b|d)a[a-z]*k"),
        lambda data: outputs.check_grep(data / "text", data / "grep-example", PATTERN),
        lambda data: outputs.check_jio(data / "text", data / "jio", FACTOR + 1),
        lambda data: outputs.check_pi(data / "pi", PI_MAPS, PI_SAMPLES + 1),
        lambda data: outputs.check_pi(data / "pi", PI_MAPS - 1, PI_SAMPLES),
        lambda data: outputs.check_sort(data / "random", data / "sorted", SORT_REDUCES - 1),
        lambda data: outputs.check_terasort(data / "random", data / "tera-out", TERASORT_REDUCES),
    ],
    ids=[
        "randomtextwriter-maps",
        "randomtextwriter-bytes",
        "randomwriter-bytes",
        "teragen-rows",
        "wordcount-reduces",
        "grep-pattern",
        "grep-example-pattern",
        "jio-factor",
        "pi-samples",
        "pi-maps",
        "sort-reduces",
        "terasort-input",
    ],
)
def test_check_fails_with_other_parameters(data: Path, call: Callable[[Path], None]) -> None:
    with pytest.raises(AssertionError):
        call(data)
