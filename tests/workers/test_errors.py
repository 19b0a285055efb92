"""Bad input and bad arguments: a non-zero exit and a clear message in the termination report."""

from __future__ import annotations

import json

import pytest

from mrsched.core.report import TaskReport
from tests.workers.data import text_corpus
from tests.workers.image import Worker


@pytest.mark.parametrize(
    ("args", "env", "code", "message"),
    [
        (["map", "--app", "nosuchapp", "--output", "o"], {}, 2, "invalid choice: 'nosuchapp'"),
        (["map", "--app", "wordcount", "--input", "text"], {}, 2, "give --output"),
        (
            ["map", "--app", "wordcount", "--output", "o", "--input", "text", "--maps", "2", "--index", "2"],
            {},
            2,
            "--index 2 is outside 0..1",
        ),
        (
            ["map", "--app", "grep", "--output", "o", "--input", "text", "--pattern", "a("],
            {},
            2,
            "not a valid regular expression",
        ),
        (
            ["map", "--app", "pi", "--output", "o", "--samples", "10", "--reduces", "3"],
            {},
            2,
            "--reduces must be 1",
        ),
        (
            ["map", "--app", "wordcount", "--output", "o", "--input", "text"],
            {"MRSCHED_SORT_BUFFER_MB": "lots"},
            2,
            "MRSCHED_SORT_BUFFER_MB='lots' is not an integer",
        ),
        (
            ["map", "--app", "wordcount", "--output", "o", "--input", "missing"],
            {},
            1,
            "missing does not exist",
        ),
        (
            ["map", "--app", "terasort", "--output", "o", "--input", "text"],
            {},
            1,
            "terasort input is malformed",
        ),
        (
            ["reduce", "--app", "wordcount", "--output", "o", "--maps", "2"],
            {},
            1,
            "map output map-00000 is missing",
        ),
        (["commit-job", "--app", "wordcount", "--output", "o", "--reduces", "2"], {}, 1, "2 part(s) missing"),
        (
            ["map", "--app", "wordcount", "--output", "o", "--split", "text/part-0.txt:x:10"],
            {},
            2,
            "START and LENGTH must be integers",
        ),
    ],
)
def test_failure_exits_non_zero_with_the_reason(
    worker: Worker, args: list[str], env: dict[str, str], code: int, message: str
) -> None:
    text_corpus(worker.data / "text", files=1, lines=50)
    result = worker.run(*args, env=env, expect=code)
    assert result.report["status"] == "failed"
    assert message in result.report["error"]
    assert message in result.stderr, "the reason is in the log too"
    assert not (worker.data / "o" / "part-r-00000").exists()


def test_task_type_and_coordinates_from_the_environment(worker: Worker) -> None:
    text_corpus(worker.data / "text", files=1, lines=50)
    env = {
        "MRSCHED_TASK_TYPE": "map",
        "MRSCHED_APP": "wordcount",
        "MRSCHED_TASK_INDEX": "1",
        "MRSCHED_MAPS": "2",
        "MRSCHED_REDUCES": "1",
        "MRSCHED_INPUT": "text",
        "MRSCHED_OUTPUT": "o",
        "MRSCHED_ATTEMPT": "4",
    }
    result = worker.run(env=env)
    assert result.report["status"] == "succeeded" and result.report["recordsIn"] > 0
    assert (
        worker.data / "o" / "_temporary" / "manual" / "intermediate" / "map-00001" / "index.json"
    ).exists()


def test_report_is_what_the_operator_parses_and_stays_under_4_kib(worker: Worker) -> None:
    text_corpus(worker.data / "text", files=1, lines=200)
    ok = worker.run("map", "--app", "wordcount", "--output", "o", "--input", "text")
    parsed = TaskReport.from_json(json.dumps(ok.report))
    assert parsed.status == "succeeded" and parsed.read_bytes == ok.report["readBytes"] > 0
    assert parsed.records_in == 200 and parsed.peak_memory_bytes > 1 << 20 and parsed.cpu_user_s > 0

    pattern = "(" + "a" * 6000  # the error quotes the pattern: longer than the kubelet keeps
    failed = worker.run(
        "map", "--app", "grep", "--output", "o", "--input", "text", "--pattern", pattern, expect=2
    )
    text = json.dumps(failed.report, separators=(",", ":"), ensure_ascii=False)
    assert len(text.encode()) <= 4096
    parsed = TaskReport.from_json(text)
    assert (
        parsed.status == "failed"
        and parsed.error.startswith("grep pattern '(aaa")
        and parsed.error.endswith("…")
    )
