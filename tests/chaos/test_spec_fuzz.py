"""Generated MapReduceJob specs through the real apiserver, with the operator running (issue 20: "a
property-based suite (hypothesis) generates MapReduceJob specs and sends them through the real apiserver").

Every generated spec ends in exactly one of:

(a) refused: ``kubectl apply`` fails with a message naming the field or the rule;
(b) Succeeded;
(c) Failed, with a non-empty ``status.reason`` and ``status.message``;
(d) Pending, with the condition ``Unplaceable`` True and a message saying why;

and well-formed canary jobs applied before, among and after them all succeed: one bad object never stops the
others. A job the apiserver accepted that is still Pending without saying why, or Running, once the others
have long finished, breaks the property.

The specs are mostly valid ones (each application of the CRD's enum, small enough to run in seconds on
model-mode emulated nodes) with up to two random perturbations: unknown applications, task counts in and out
of range, malformed or huge quantities, paths leaving the data volume, node selectors matching nothing,
tolerations the Pod API refuses, out-of-range limits, unknown fields... Valid values that would only make a job
long (thousands of maps, terabytes of input) are left out: a job still Running at the end must mean a defect.
A few pinned specs (``PINNED``) run every time: each outcome the operator decides itself, and what this suite
has found.

One control plane, one operator and one pair of emulated nodes serve every example (starting them per example
would take minutes each): hypothesis drives an inner function that applies each spec under its own name and
checks refusals at once; the accepted jobs are classified together at the end, and a summary of the outcomes is
printed (``pytest -s``). Examples are derandomized, so a CI run sees the same specs every time.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, note, seed, settings
from hypothesis import strategies as st

from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube
from tests.operatorhelpers import OperatorProcess, apply, apply_crds, job_manifest, start_operator

#: Examples, each a batch of specs: 40 specs (and PINNED), about half of them accepted and run on two small
#: emulated nodes.
#: Batches rather than one spec per example because after its first ten examples hypothesis spends most of
#: the rest on near-copies of earlier ones (its span mutator): cheap in a unit test, minutes of cluster time
#: here. The first example is the simplest one (plain wordcount jobs), a baseline.
MAX_EXAMPLES = 10
BATCH = 4
#: Model seconds per wall second on the emulated nodes: a pi map of ~10 model seconds takes ~2.5 s.
TIME_SCALE = 4.0
#: How long after the last example every accepted job has to have settled (all have within 20-110 s; the last
#: are those that fail by retrying to their backoff limit, or run after the throughput policy's node probes).
SETTLE_S = 180.0
#: Another seed explores other specs (MRSCHED_SPEC_FUZZ_SEED=7 pytest ...); without it the specs are the same on
#: every run.
EXPLORE_SEED = os.environ.get("MRSCHED_SPEC_FUZZ_SEED")
#: A canary job every this many examples, besides one before the first and one after the last.
CANARY_EVERY = 12
#: What is tested here is how each job ends, not when, so the operator's waits are cut short: a failed task
#: attempt is retried after 0.5 s, doubling up to 2 s (by default 2 s up to 60 s: a job failing with
#: backoffLimit 20 would take twenty minutes), and a job of the throughput policy has its nodes probed with two
#: short runs of each probe (by default four at full length: the node takes no tasks of any job for minutes).
OPERATOR_ENV = {
    "MRSCHED_BACKOFF_BASE_S": "0.5",
    "MRSCHED_BACKOFF_MAX_S": "2",
    "MRSCHED_PROBE_SCALE": "0.2",
    "MRSCHED_PROBE_REPEATS": "2",
    # Fuzzed specs name images and users; what a job may name is tested in tests/unit/operator/test_job_policy.py.
    "MRSCHED_ALLOWED_IMAGES": "*",
    "MRSCHED_ALLOW_USER_OVERRIDE": "true",
}

APPS = (
    "wordcount",
    "grep",
    "sort",
    "terasort",
    "pi",
    "randomwriter",
    "randomtextwriter",
    "teragen",
    "jio",
    "custom",
)
MAP_ONLY = frozenset({"randomwriter", "randomtextwriter", "teragen", "jio"})
READS_INPUT = frozenset({"wordcount", "grep", "sort", "terasort", "jio"})
POLICIES = (
    "fifo",
    "fair",
    "capacity",
    "kube-default",
    "throughput",
    "dara",
    "diagnosis",
    "learning",
    "adaptive-slots",
    "coupling",
    "lsps",
)
SMALL = {"cpu": "500m", "memory": "256Mi"}
NAME_MAX = 45  # the CRD's rule on metadata.name
#: A refusal names what is wrong: a field path ("spec.maps: Invalid value", "spec: Invalid value" for a rule on the
#: whole spec, metadata.name) or an unknown field ('unknown field "spec.surprise"').
NAMES_A_FIELD = re.compile(r'\bspec(\.[\w\[\]-]+)*: |\bmetadata\.name\b|unknown field "')

Spec = dict[str, Any]


@dataclass
class Draft:
    """A generated job: its spec, what was done to it, and how the manifest around it is bent."""

    spec: Spec
    perturbations: list[str] = field(default_factory=list)
    name_length: int | None = None  # pad the job's name to this many characters
    top_level_extra: bool = False  # an unknown field beside spec

    def manifest(self, name: str) -> dict[str, Any]:
        if self.name_length is not None:
            name = (name + "-" + "x" * self.name_length)[: self.name_length]
        body = job_manifest(name, **copy.deepcopy(self.spec))
        if self.top_level_extra:
            body["extra"] = {"surprise": True}
        return body


# --- strategies ------------------------------------------------------------------------------------------------

Draw = Callable[[st.SearchStrategy[Any]], Any]


@st.composite
def valid_specs(draw: Draw) -> Spec:
    """A spec the apiserver accepts and the emulated nodes run in seconds."""
    app = draw(st.sampled_from(APPS))
    spec: Spec = {
        "workload": {"app": app},
        "output": {"path": draw(st.sampled_from(["out", "results/run-1", "./o", "a/b/c/", "..o/x"]))},
        "maps": draw(st.integers(1, 3)),
        "reduces": 0 if app in MAP_ONLY else 1 if app == "pi" else draw(st.integers(1, 2)),
    }
    workload = spec["workload"]
    if app in READS_INPUT:
        spec["input"] = {
            "paths": draw(
                st.lists(st.sampled_from(["in", "in/part-0", "./in", "..data/x"]), min_size=1, max_size=3)
            ),
            "bytes": draw(st.integers(0, 20_000_000)),
        }
    if app == "pi":
        workload["parameters"] = {"samples": draw(st.integers(1, 100_000_000))}
    elif app == "grep":
        workload["parameters"] = {"pattern": draw(st.sampled_from(["the", "a.*b", "^x$", "[0-9]+"]))}
    elif app in ("randomwriter", "randomtextwriter") and draw(st.booleans()):
        workload["parameters"] = {"bytesPerMap": draw(st.integers(1, 10_000_000))}
    elif app == "teragen":
        workload["parameters"] = {"rows": draw(st.integers(1, 100_000))}
    elif app == "jio" and draw(st.booleans()):
        workload["parameters"] = {"outputFactor": draw(st.integers(1, 100))}
    elif app == "custom":
        workload["image"] = "ghcr.io/example/mapreduce:1.0"
        workload["command"] = ["python", "-m", "mrworker"]
    if draw(st.integers(0, 3)):  # mostly small tasks; else the schema's defaults (1 CPU, 512Mi)
        spec["resources"] = {"map": dict(SMALL), "reduce": dict(SMALL)}
    optional: dict[str, st.SearchStrategy[Any]] = {
        "policy": st.sampled_from(POLICIES),
        "priority": st.integers(-1000, 1000),
        "queue": st.sampled_from(["default", "research", "q" * 63]),
        "user": st.sampled_from(["alice", "", "u" * 63]),
        "backoffLimit": st.integers(0, 3),
        "taskDeadlineSeconds": st.integers(120, 604_800),
        "reduceSlowStart": st.floats(0, 1),
        "sortBufferMB": st.integers(1, 4096),
        "ttlSecondsAfterFinished": st.just(3600),  # not less: the job must still be there to be classified
        "hints": st.fixed_dictionaries({"map": st.fixed_dictionaries({"cpu": st.integers(1, 10)})}),
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), max_size=3, unique=True)):
        spec[key] = draw(optional[key])
    return spec


#: Quantities for resources.<kind>.<cpu|memory>: valid ones, valid but far beyond any node, malformed ones.
QUANTITIES: list[Any] = [
    *["250m", "1", "0.5", "1500m", "128Mi", "1Gi", "100u", "1Ki", 1, 2, "+1"],  # valid
    *["1E", "500Mi", "1e3", "64Gi", 1000, "1e1000"],  # valid quantities; no node has that much
    *["abc", "-1", "0", 0, -1, "12xyz", "", "1.5.5", " 1", "1 ", "NaN", "Infinity", "0.0"],  # malformed
]


def _set(spec: Spec, path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for key in parents:
        spec = spec.setdefault(key, {})
    spec[leaf] = value


def _resources(draw: Draw, draft: Draft) -> str:
    kind, name = draw(st.sampled_from(["map", "reduce"])), draw(st.sampled_from(["cpu", "memory"]))
    value = draw(st.sampled_from(QUANTITIES))
    _set(draft.spec, f"resources.{kind}.{name}", value)
    return f"resources.{kind}.{name}={value!r}"


def _input(draw: Draw, draft: Draft) -> str:
    choice = draw(
        st.sampled_from(["none", "empty", "dotdot", "absolute", "negative", "splits", "bad-splits"])
    )
    spec = draft.spec
    if choice == "none":
        spec.pop("input", None)
    elif choice == "empty":
        spec["input"] = {"paths": []}
    elif choice == "dotdot":
        spec["input"] = {"paths": ["in", "../other/in"], "bytes": 1000}
    elif choice == "absolute":
        spec["input"] = {"paths": ["/etc/passwd"], "bytes": 1000}
    elif choice == "negative":
        spec.setdefault("input", {"paths": ["in"]})["bytes"] = -1
    else:
        n = draw(st.integers(1, 3))
        splits = [{"path": f"in/part-{i}", "length": 100_000, "hosts": ["somewhere"]} for i in range(n)]
        spec["input"] = {"splits": splits}
        spec["maps"] = n if choice == "splits" else n + 1
    return f"input:{choice}"


def _parameters(draw: Draw, draft: Draft) -> str:
    bad = draw(
        st.sampled_from(
            [
                {"samples": 0},
                {"samples": -1},
                {"samples": 100_000_001},
                {"samples": "ten"},
                {"pattern": ""},
                {"pattern": "("},
                {"rows": 0},
                {"outputFactor": 101},
                {"bytesPerMap": 1},
                {"seed": 7},
                {"colour": "blue"},  # not in the schema
            ]
        )
    )
    draft.spec["workload"].setdefault("parameters", {}).update(bad)
    return f"parameters={bad}"


def _image(draw: Draw, draft: Draft) -> str:
    change = draw(
        st.sampled_from(
            [
                {"image": "Not A Reference"},
                {"image": " ghcr.io/example/mapreduce:1.0"},  # the Pod API refuses surrounding whitespace
                {"image": ""},
                {"image": "ghcr.io/example/mapreduce:1.0"},
                {"command": []},
                {"command": ["run-task"]},
            ]
        )
    )
    draft.spec["workload"].update(change)
    return f"workload={change}"


def _unknown_field(draw: Draw, draft: Draft) -> str:
    where = draw(st.sampled_from(["spec", "workload", "resources", "top"]))
    if where == "spec":
        draft.spec["surprise"] = 1
    elif where == "workload":
        draft.spec["workload"]["colour"] = "red"
    elif where == "resources":
        _set(draft.spec, "resources.map.gpu", 1)
    else:
        draft.top_level_extra = True
    return f"unknown-field:{where}"


def _name(draw: Draw, draft: Draft) -> str:
    draft.name_length = draw(st.sampled_from([NAME_MAX, NAME_MAX + 1, 63]))
    return f"name-length={draft.name_length}"


def _simple(path: str, values: list[Any]) -> Callable[[Draw, Draft], str]:
    def perturb(draw: Draw, draft: Draft) -> str:
        value = draw(st.sampled_from(values))
        _set(draft.spec, path, value)
        return f"{path}={value!r}"

    return perturb


PERTURBATIONS: dict[str, Callable[[Draw, Draft], str]] = {
    "app": _simple("workload.app", ["nosuch", "WordCount", "", *APPS]),
    "maps": _simple("maps", [-1, 0, 1, 4, 10_001, 2**31, "3"]),
    "reduces": _simple("reduces", [-1, 0, 1, 3, 1_001, 2**31, 1.5]),
    "resources": _resources,
    "output": _simple(
        "output.path", ["", "/etc", "../x", "a/../../b", "a/..", "..", "x" * 1025, "a//b", "./o", "a b/ü"]
    ),
    "nodeSelector": _simple(
        "nodeSelector",
        [
            {"mrsched.dev/node-class": "medium"},
            {"kubernetes.io/os": "linux"},
            {"disk": "nvme"},
            {"mrsched.dev/node-class": "large"},
            {"bad key!": "x"},  # not a label key: the Pod API would refuse the task pods
            {"kubernetes.io/os": "has space"},
            {},
        ],
    ),
    "tolerations": _simple(
        "tolerations",
        [
            [{"operator": "Exists"}],
            [{"key": "dedicated", "operator": "Equal", "value": "mr", "effect": "NoSchedule"}],
            [{"key": "k", "operator": "Bogus"}],  # the Pod API refuses these four
            [{"key": "k", "effect": "Sometimes"}],
            [{"key": "k", "operator": "Exists", "value": "v"}],
            [{"key": "k", "tolerationSeconds": "soon"}],
            [],
        ],
    ),
    "backoffLimit": _simple("backoffLimit", [-1, 0, 1, 20, 21, True]),
    "taskDeadlineSeconds": _simple("taskDeadlineSeconds", [-1, 0, 1, 2, 600, 604_801]),
    "parameters": _parameters,
    "input": _input,
    "image": _image,
    "unknown-field": _unknown_field,
    "policy": _simple("policy", [*POLICIES, "nosuch", ""]),
    "user": _simple("user", ["bob", "u" * 64, 42]),
    "queue": _simple("queue", ["nosuch-queue", "q" * 64]),
    "priority": _simple("priority", [-1001, -1000, 1000, 1001]),
    "hints": _simple("hints", [{"map": {"cpu": 11}}, {"reduce": {"disk": 0}}, {"map": {"memory": 10}}]),
    "reduceSlowStart": _simple("reduceSlowStart", [-0.1, 0, 1, 1.5]),
    "sortBufferMB": _simple("sortBufferMB", [0, 1, 4096, 4097]),
    "ttlSecondsAfterFinished": _simple("ttlSecondsAfterFinished", [-1, 3600]),
    "name": _name,
}


@st.composite
def drafts(draw: Draw) -> Draft:
    draft = Draft(draw(valid_specs()))
    # One in five left as it is, the others bent one or two ways (with three, nearly every spec is refused).
    many = 0 if draw(st.integers(0, 4)) == 0 else 2
    for kind in draw(
        st.lists(st.sampled_from(sorted(PERTURBATIONS)), min_size=min(1, many), max_size=many, unique=True)
    ):
        draft.perturbations.append(PERTURBATIONS[kind](draw, draft))
    return draft


def _pinned(label: str, **spec: Any) -> Draft:
    return Draft({"output": {"path": "out"}, "maps": 1, "reduces": 1, **spec}, [f"pinned: {label}"])


PI = {"app": "pi", "parameters": {"samples": 1000}}
#: Specs every run tries besides the generated ones: each outcome the operator itself decides.
PINNED = [
    _pinned(  # InvalidImageName: Failed, PodCannotStart
        "image 'Not A Reference'",
        workload={"app": "custom", "image": "Not A Reference", "command": ["python", "-m", "mrworker"]},
    ),
    # Unplaceable: too big a request (within the CRD's 256 cores, beyond every node).
    _pinned("map cpu '200'", workload=PI, resources={"map": {"cpu": "200"}}),
    # A quantity to the apiserver, infinite to Python: refused by the CRD's maxima (at most 4Ti), which name the
    # field; the operator's InvalidSpec stays for what the schema lets through.
    _pinned("map memory '1e1000'", workload=PI, resources={"map": {"memory": "1e1000"}}),
    # 1.5 bytes: task pods asking for 0Mi.
    _pinned("map memory '1500m'", workload=PI, resources={"map": {"memory": "1500m"}}),
    # A label value no node can have (nor a pod ask for): Unplaceable, NoMatchingNode.
    _pinned("nodeSelector 'has space'", workload=PI, nodeSelector={"kubernetes.io/os": "has space"}),
    # Found by this suite: tolerations the Pod API refuses (the CRD keeps them as they are) left the job Pending
    # "waiting for the scheduler" for ever, its pods refused every round.
    _pinned(
        "tolerations [{key: k, operator: Bogus}]",
        workload=PI,
        tolerations=[{"key": "k", "operator": "Bogus"}],
    ),
]


# --- outcomes --------------------------------------------------------------------------------------------------


def canary(name: str) -> dict[str, Any]:
    return job_manifest(
        name,
        workload={"app": "pi", "parameters": {"samples": 1000}},
        output={"path": f"canaries/{name}"},
        maps=2,
        reduces=1,
        resources={"map": dict(SMALL), "reduce": dict(SMALL)},
    )


def condition(job: dict[str, Any], kind: str) -> dict[str, Any]:
    conditions: list[dict[str, Any]] = (job.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), {})


def outcome(job: dict[str, Any] | None) -> str | None:
    """The job's outcome if it is one the property allows ('Succeeded', 'Failed/<reason>',
    'Unplaceable/<reason>'), else None (not settled, or settled without saying why)."""
    if job is None:
        return None
    status = job.get("status") or {}
    phase = status.get("phase")
    if phase == "Succeeded":
        return "Succeeded"
    if phase == "Failed" and status.get("reason") and status.get("message"):
        return f"Failed/{status['reason']}"
    blocked = condition(job, "Unplaceable")
    if phase == "Pending" and blocked.get("status") == "True" and blocked.get("message"):
        return f"Unplaceable/{blocked.get('reason')}"
    return None


def list_jobs(kube: Kube, namespace: str) -> dict[str, dict[str, Any]]:
    items = json.loads(kube.kubectl("get", "mrj", "-n", namespace, "-o", "json").stdout)["items"]
    return {job["metadata"]["name"]: job for job in items}


def operator_says(operator: OperatorProcess, name: str) -> list[str]:
    """The operator's distinct log messages about a job, most frequent first, with their counts: the apiserver's
    own words where it refused a request (attempt numbers folded, so a message repeated every round shows once)."""
    said: Counter[str] = Counter()
    for line in operator.logs().splitlines():
        if name not in line:
            continue
        try:
            entry = json.loads(line)
            text = f"{entry.get('severity', '')}: {entry.get('message', '')}"
        except ValueError:
            text = line
        body = re.search(r'"message":"((?:[^"\\]|\\.)*)"', text.split("HTTP response body:", 1)[-1])
        if body:  # an ApiException: its status line and the Status message, not the headers
            text = f"{text.split(chr(10), 1)[0]} {body.group(1)}"
        said[re.sub(r"-a\d+\b", "-a<n>", text.replace('\\"', '"'))] += 1
    return [f"{count}x {text[:500]}" for text, count in said.most_common(5)]


def diagnose(
    kube: Kube, namespace: str, operator: OperatorProcess, name: str, job: dict[str, Any] | None
) -> str:
    """What a job that broke the property did: its status, its pods, its events and the operator's words."""
    status = (job or {}).get("status") or {}
    pods = json.loads(
        kube.kubectl("get", "pods", "-n", namespace, "-l", f"mrsched.dev/job={name}", "-o", "json").stdout
    )["items"]
    events = json.loads(
        kube.kubectl(
            "get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}", "-o", "json"
        ).stdout
    )["items"]
    return "\n".join(
        [
            "phase {phase}, reason {reason}, message {message}".format(
                **{k: repr(status.get(k)) for k in ("phase", "reason", "message")}
            ),
            "conditions: "
            + "; ".join(
                f"{c['type']}={c['status']} ({c.get('reason')}: {c.get('message')})"
                for c in status.get("conditions") or []
            ),
            f"tasks: {json.dumps(status.get('tasks'), sort_keys=True)}",
            f"pods ({len(pods)}):",
            *(
                f"  {p['metadata']['name']}: {p['status'].get('phase')} {p['status'].get('reason', '')}"
                for p in pods[:6]
            ),
            f"events ({len(events)}):",
            *(f"  {e.get('type')} {e.get('reason')}: {e.get('message')}" for e in events[-6:]),
            "operator log:",
            *(f"  {line}" for line in operator_says(operator, name)),
        ]
    )


@pytest.fixture
def fuzz_operator(kube: Kube, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    apply_crds(kube)
    handle = start_operator(kube, namespace, tmp_path / "logs", env=OPERATOR_ENV)
    yield handle
    handle.stop()


@pytest.mark.slow  # 2-4 minutes: make chaos runs it (make test's budget on CI's 2 cores has no room for it)
def test_every_generated_spec_is_refused_runs_fails_with_a_reason_or_says_why_it_waits(
    kube: Kube, namespace: str, emulate: EmulateFactory, fuzz_operator: OperatorProcess
) -> None:
    started = time.monotonic()
    emulate({"small": 1, "medium": 1}, time_scale=TIME_SCALE)
    names = (f"fz-{n:03d}" for n in itertools.count())
    canaries: list[str] = []
    accepted: dict[str, Draft] = {}
    refused: dict[str, tuple[Draft, str]] = {}

    def add_canary() -> None:
        canaries.append(f"canary-{len(canaries)}")
        apply(kube, namespace, canary(canaries[-1]))

    add_canary()

    # The fixtures are shared by every example on purpose (a control plane and an operator per example would
    # take minutes each); each example applies its own job, under its own name, and nothing else.
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=EXPLORE_SEED is None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(batch=st.lists(drafts(), min_size=BATCH, max_size=BATCH))
    @example(batch=PINNED)
    def submit(batch: list[Draft]) -> None:
        for draft in batch:
            name = next(names)
            manifest = draft.manifest(name)
            name = manifest["metadata"]["name"]
            note(f"{name}: {draft.perturbations}\n{yaml.safe_dump(manifest, sort_keys=False)}")
            result = apply(kube, namespace, manifest, check=False)
            if result.returncode == 0:
                accepted[name] = draft
            else:
                message = result.stderr.strip()
                # (a): refused, saying which field or rule
                assert NAMES_A_FIELD.search(message), f"{name} refused without naming a field: {message!r}"
                refused[name] = (draft, message)
            if len(accepted) + len(refused) == len(canaries) * CANARY_EVERY:
                add_canary()

    if EXPLORE_SEED is not None:
        submit = seed(int(EXPLORE_SEED))(submit)
    submit()
    add_canary()
    applied_at = time.monotonic()

    # Every accepted job (and canary) settles: Succeeded, Failed saying why, or Pending saying why.
    deadline = applied_at + SETTLE_S
    settled_at: dict[str, float] = {}  # seconds after the last apply
    jobs = list_jobs(kube, namespace)
    while time.monotonic() < deadline:
        jobs = list_jobs(kube, namespace)
        for name in [*accepted, *canaries]:
            if name not in settled_at and outcome(jobs.get(name)):
                settled_at[name] = time.monotonic() - applied_at
        if len(settled_at) == len(accepted) + len(canaries):
            break
        time.sleep(2)

    outcomes: Counter[str] = Counter({"refused": len(refused)})
    violations = []
    for name, draft in accepted.items():
        seen = outcome(jobs.get(name))
        outcomes[seen or "VIOLATION"] += 1
        if seen is None:
            violations.append(
                f"--- {name} ({draft.perturbations}) neither succeeded, failed saying why, nor said why it waits\n"
                + yaml.safe_dump(draft.manifest(name)["spec"], sort_keys=False)
                + diagnose(kube, namespace, fuzz_operator, name, jobs.get(name))
            )
    for name in canaries:
        if outcome(jobs.get(name)) != "Succeeded":
            violations.append(
                f"--- canary {name} did not succeed\n"
                + diagnose(kube, namespace, fuzz_operator, name, jobs.get(name))
            )
    crashed_rounds = [line for line in fuzz_operator.logs().splitlines() if "scheduling round failed" in line]
    if crashed_rounds:
        violations.append(f"--- {len(crashed_rounds)} scheduling rounds failed, e.g. {crashed_rounds[0]}")
    if fuzz_operator.proc.poll() is not None:
        violations.append(f"--- the operator exited ({fuzz_operator.proc.returncode})")

    print(
        f"\nspec fuzz: {len(accepted) + len(refused)} specs, {len(canaries)} canaries; {len(settled_at)} of "
        f"{len(accepted) + len(canaries)} jobs settled, the last {max(settled_at.values(), default=0):.0f} s after "
        f"the last apply; {time.monotonic() - started:.0f} s in all"
    )
    for name in sorted([*accepted, *refused]):
        draft, seen = (
            (accepted[name], outcome(jobs.get(name)) or "VIOLATION")
            if name in accepted
            else (refused[name][0], f"refused: {_refusal_kind(refused[name][1])}")
        )
        when = f"{settled_at[name]:4.0f}s" if name in settled_at else "     "
        print(
            f"  {name[:10]:10s} {draft.spec['workload'].get('app')!s:16s} {seen:38s} {when} {draft.perturbations}"
        )
    for kind, count in sorted(outcomes.items()):
        print(f"  {count:3d} {kind}")
    refusals = Counter(_refusal_kind(message) for _, message in refused.values())
    print("  refusals: " + ", ".join(f"{kind} {count}" for kind, count in refusals.most_common()))
    assert not violations, "\n".join(violations)


def _refusal_kind(message: str) -> str:
    """The field or rule a refusal names, for the summary (``spec.maps``, ``unknown field``, ...)."""
    if "unknown field" in message:
        return "unknown field"
    match = re.search(r"\b(spec(?:\.[A-Za-z]+)*|metadata\.name)", message)
    return match.group(1) if match else "other"
