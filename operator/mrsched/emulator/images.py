"""Image pulls as the kubelet sees them: reference grammar, injected pull failures and the pull back-off.

The emulator has no registry and pulls nothing, but a cluster under test must still see what a kubelet shows
when pulls fail, because controllers react to it (a job stuck on ``ImagePullBackOff`` is not making progress).
This follows the kubelet's image manager (``pkg/kubelet/images/image_manager.go``):

* an image reference that does not parse (``github.com/distribution/reference``'s grammar) is
  ``InvalidImageName``, "Failed to apply default image tag ...", and never pulls;
* a pull that fails is ``ErrImagePull`` with the runtime's error and starts (or doubles) the back-off, which
  is kept per pod and image (``flowcontrol.Backoff`` keyed ``<pod uid>_<image>``): 10 s, doubling, at most 300 s;
* a sync during the back-off is ``ImagePullBackOff``, "Back-off pulling image ...: ErrImagePull: <last error>"
  (the previous error appended since Kubernetes 1.32); the first sync after it pulls again.

Which images fail, and until when, is chaos (:class:`FailingImages`); the rest pull at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: The kubelet's image pull back-off: the first wait (``imageBackOffPeriod``), and its cap (``MaxImageBackOff``).
KUBELET_IMAGE_BACKOFF_S = 10.0
KUBELET_MAX_IMAGE_BACKOFF_S = 300.0
#: A failed pull's sync is followed at once by another (the runtime's events wake the pod worker), which finds
#: the back-off running: ErrImagePull shows only for about this long before ImagePullBackOff replaces it.
BACKOFF_RESYNC_S = 1.0

ERR_IMAGE_PULL = "ErrImagePull"
IMAGE_PULL_BACKOFF = "ImagePullBackOff"
INVALID_IMAGE_NAME = "InvalidImageName"

_ALNUM = r"[a-z0-9]+"
_PATH_COMPONENT = rf"{_ALNUM}(?:(?:[._]|__|-+){_ALNUM})*"
_PATH = rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_TAIL = re.compile(rf"(?P<path>{_PATH})(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?")
_DOMAIN_RE = re.compile(_DOMAIN)
_NAME_MAX = 255


@dataclass(frozen=True)
class ImageRef:
    """A parsed reference, normalized as containerd names it (``busybox`` is ``docker.io/library/busybox``)."""

    domain: str
    path: str
    tag: str
    digest: str

    def __str__(self) -> str:
        return (
            f"{self.domain}/{self.path}"
            + (f":{self.tag}" if self.tag else "")
            + (f"@{self.digest}" if self.digest else "")
        )


def parse_image(image: str) -> ImageRef | str:
    """The reference, or the parser's error (what the kubelet reports as ``InvalidImageName``).

    As ``ParseNormalizedNamed`` does: the first component is a registry if it has a dot or a port, is
    ``localhost`` or has upper case; otherwise the registry is Docker Hub (``library/`` for one component).
    """
    first, slash, rest = image.partition("/")
    if slash and (any(c in first for c in ".:") or first == "localhost" or first.lower() != first):
        domain, remainder = first, rest
    else:
        domain, remainder = "docker.io", image
        if "/" not in remainder.split(":", 1)[0].split("@", 1)[0]:
            remainder = f"library/{remainder}"
    if not _DOMAIN_RE.fullmatch(domain):
        return "invalid reference format"
    tail = _TAIL.fullmatch(remainder)
    if tail is None:
        lowered = _TAIL.fullmatch(remainder.lower())
        if lowered is not None:
            return f"invalid reference format: repository name ({remainder[: lowered.end('path')]}) must be lowercase"
        return "invalid reference format"
    if len(domain) + 1 + len(tail["path"]) > _NAME_MAX:
        return "repository name must not be more than 255 characters"
    return ImageRef(
        domain, tail["path"], tail["tag"] or ("" if tail["digest"] else "latest"), tail["digest"] or ""
    )


def invalid_image_message(image: str, error: str) -> str:
    return f'Failed to apply default image tag "{image}": couldn\'t parse image name "{image}": {error}'


def pull_error(ref: ImageRef) -> str:
    """What containerd answers (through the CRI, as the kubelet quotes it) when the registry fails the pull."""
    registry = "registry-1.docker.io" if ref.domain == "docker.io" else ref.domain
    manifest = ref.digest or ref.tag
    return (
        f'rpc error: code = Unknown desc = failed to pull and unpack image "{ref}": failed to resolve reference '
        f'"{ref}": unexpected status from HEAD request to https://{registry}/v2/{ref.path}/manifests/{manifest}: '
        "503 Service Unavailable"
    )


def backoff_message(image: str, last_error: str) -> str:
    return f'Back-off pulling image "{image}": {ERR_IMAGE_PULL}: {last_error}'


class FailingImages:
    """Chaos: images (exact ``image`` strings of containers) whose pulls fail until a time (monotonic)."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}

    def fail(self, image: str, for_s: float, now: float) -> None:
        """Pulls of ``image`` fail for the next ``for_s`` seconds; 0 or less clears it."""
        if for_s > 0:
            self._until[image] = now + for_s
        else:
            self._until.pop(image, None)

    def failing(self, image: str, now: float) -> bool:
        until = self._until.get(image)
        if until is not None and now >= until:
            del self._until[image]
            return False
        return until is not None

    def describe(self, now: float) -> dict[str, float]:
        """Seconds left per failing image."""
        return {image: round(until - now, 3) for image, until in self._until.items() if until > now}


@dataclass
class _Backoff:
    """One entry of the kubelet's ``flowcontrol.Backoff``, plus the last pull's error (``prevPullErrMsg``)."""

    duration_s: float
    updated: float
    error: str

    def running(self, now: float) -> bool:
        return now - self.updated < self.duration_s


@dataclass
class PodPulls:
    """A pod's image pulls: the back-off of each image that failed, and when its pod worker syncs next."""

    base_s: float
    max_s: float = KUBELET_MAX_IMAGE_BACKOFF_S
    backoffs: dict[str, _Backoff] = field(default_factory=dict)

    def ensure(self, image: str, failing: FailingImages, now: float) -> tuple[str, str] | None:
        """``EnsureImageExists`` for one container: None once the image is there, else (reason, message)."""
        ref = parse_image(image)
        if isinstance(ref, str):
            return INVALID_IMAGE_NAME, invalid_image_message(image, ref)
        entry = self.backoffs.get(image)
        if entry is not None and entry.running(now):
            return IMAGE_PULL_BACKOFF, backoff_message(image, entry.error)
        if not failing.failing(image, now):
            self.backoffs.pop(image, None)
            return None
        error = pull_error(ref)
        if entry is None:
            self.backoffs[image] = _Backoff(self.base_s, now, error)
        else:
            entry.duration_s, entry.updated, entry.error = min(2 * entry.duration_s, self.max_s), now, error
        return ERR_IMAGE_PULL, error

    def next_sync(self, reasons: list[str], now: float) -> float:
        """When the pod worker syncs again: soon after a failed pull (to show the back-off), else when the
        first back-off ends; never for a name that cannot parse (only a new spec changes that)."""
        if ERR_IMAGE_PULL in reasons:
            return now + min(BACKOFF_RESYNC_S, min(b.duration_s for b in self.backoffs.values()) / 2)
        ends = [b.updated + b.duration_s for b in self.backoffs.values()]
        return min(ends) if ends and IMAGE_PULL_BACKOFF in reasons else float("inf")
