"""What a MapReduceJob may ask for on this cluster: the admin's job policy (docs/security.md).

A job's ``workload.image`` and ``workload.command`` run code on the workers with every tenant's data volume
mounted, ``spec.user`` names whose share (lsps) the job draws on, and ``spec.policy`` picks the placement
rules. The chart's ValidatingAdmissionPolicy refuses a job outside the admin's rules at admission; this module
checks the same rules again in the operator, so that a cluster without the admission policy (rbac.create false,
the policy deleted, a job stored before the rules tightened) still never runs one. A job is checked before its
first task starts; one already running when the rules tighten finishes under the rules it was admitted by.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobspec import InvalidSpec, JobSpec
from mrsched.operator.model.pods import PodAttempt, read_attempt

#: In ``allowed_images``: any image (the chart's ``jobPolicy.allowedImages: ["*"]``).
ANY_IMAGE = "*"


class NotAllowed(InvalidSpec):
    """A job the admin's job policy does not allow: Failed, reason ``NotAllowed``, with the rule it broke."""

    reason = "NotAllowed"


def image_allowed(image: str, prefixes: tuple[str, ...]) -> bool:
    """``image`` starts with one of ``prefixes`` (``registry.example/team/`` allows that repository path and
    everything under it); ``*`` allows any image."""
    return any(p == ANY_IMAGE or image.startswith(p) for p in prefixes)


def check(spec: JobSpec, config: OperatorConfig) -> None:
    """Raise :class:`NotAllowed` when ``spec`` asks for what ``config``'s job policy does not allow."""
    if spec.image or spec.command:
        if not spec.image:
            raise NotAllowed(
                "workload.command needs a workload.image from the allowed images: the operator's worker image "
                "runs only its own command"
            )
        if not image_allowed(spec.image, config.allowed_images):
            allowed = ", ".join(config.allowed_images) or "none"
            raise NotAllowed(
                f"workload.image {spec.image!r} is not allowed on this cluster (allowed image prefixes: {allowed}; "
                "the chart's jobPolicy.allowedImages)"
            )
    if spec.user_set and spec.user != spec.namespace and not config.allow_user_override:
        raise NotAllowed(
            f"spec.user {spec.user!r} differs from the job's namespace {spec.namespace!r}, and this cluster does "
            "not allow naming another user (the chart's jobPolicy.allowUserOverride)"
        )
    if spec.policy and config.allowed_policies and spec.policy not in config.allowed_policies:
        raise NotAllowed(
            f"spec.policy {spec.policy!r} is not allowed on this cluster (allowed: "
            f"{', '.join(config.allowed_policies)}; the chart's jobPolicy.allowedPolicies)"
        )


def within_namespace_caps(
    creations: list[dict[str, Any]],
    live_pods: Iterable[dict[str, Any]],
    cap: int,
    parse: Callable[[dict[str, Any]], PodAttempt | None] = read_attempt,
) -> list[dict[str, Any]]:
    """The pods of ``creations`` (in the policies' order) that keep each namespace at or under ``cap`` task
    pods running or pending, counting its ``live_pods``; the rest stay pending for a later round. 0: no cap."""
    if cap <= 0:
        return creations
    live: Counter[str] = Counter()
    for pod in live_pods:
        attempt = parse(pod)
        if attempt is not None and attempt.live:
            live[pod["metadata"]["namespace"]] += 1
    kept = []
    for pod in creations:
        namespace = pod["metadata"]["namespace"]
        if live[namespace] < cap:
            live[namespace] += 1
            kept.append(pod)
    return kept
