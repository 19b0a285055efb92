"""DARA's model (seed 002, Gupta thesis, chapter 4), pure functions of arrays: the loads and the load-dynamic
task time of Eq 4.12, the per-node throughput of Eq 4.9/4.16, BEST_APP_TO_ADD (Alg 4.3.4), and the
least-squares fit of Eq 4.12 to observed maps (§4.2.3). Eq 4.16's search (COMPUTE_OPTIMAL_ASSIGNMENT) is
:mod:`mrsched.policies.dara.search`; the policy that keeps these up to date and places by them is
:mod:`mrsched.policies.dara`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float64]


def load_ratios(c: Vector, d: Vector) -> tuple[Vector, Vector]:
    """§4.2.2 (unnumbered): R_c = c/(c+d), R_d = d/(c+d); an application with c = d = 0 counts as CPU-only."""
    total = c + d
    safe = np.where(total > 0, total, 1.0)
    rc = np.where(total > 0, c / safe, 1.0)
    return rc, 1.0 - rc


def node_loads(x: Vector, rc: Vector, rd: Vector) -> tuple[float, float]:
    """§4.2.2 (unnumbered): L_c = Σ_j R_c^j x_j and L_d = Σ_j R_d^j x_j over all containers of x (I4-2)."""
    return float(rc @ x), float(rd @ x)


def predict_times(lam: Vector, c: Vector, d: Vector, alpha_c: float, alpha_d: float, x: Vector) -> Vector:
    """Eq 4.12: t_j = λ_j + c_j α_c L_c² + d_j α_d L_d², with the loads of the whole vector x."""
    rc, rd = load_ratios(c, d)
    lc, ld = node_loads(x, rc, rd)
    return np.asarray(lam + c * alpha_c * lc**2 + d * alpha_d * ld**2, dtype=np.float64)


def node_throughput(lam: Vector, x: Vector, t: Vector) -> float:
    """Eq 4.9 for one node (the summand of Eq 4.16): Σ_j λ_j x_j / t_j; applications with x_j = 0 add 0."""
    safe = np.where(t > 0, t, 1.0)
    return float(np.sum(np.where(x > 0, lam * x / safe, 0.0)))


def window_throughput(lam: Vector, completed: Vector, window_s: float) -> float:
    """Eq 4.4: τ = Σ_i Σ_j λ_j y_ij / T^w (``completed`` holds y_ij summed over nodes, per application)."""
    return float(lam @ completed) / window_s if window_s > 0 else 0.0


def single_app_optimum(lam: float, k: float) -> float:
    """Digest §4.1.5 [D]: alone on a node, τ(x) = λx/(λ + Kx²) peaks at x = sqrt(λ/K) (inf when K = 0)."""
    return math.sqrt(lam / k) if k > 0 else math.inf


def best_app_to_add(optimal: dict[str, int], current: dict[str, int], apps: list[str]) -> str | None:
    """BEST_APP_TO_ADD (Alg 4.3.4): argmax_A (x*_A − x_A) over ``apps``; ties go to the earlier app."""
    if not apps:
        return None
    return max(apps, key=lambda a: (optimal.get(a, 0) - current.get(a, 0), -apps.index(a)))


@dataclass(frozen=True)
class Observation:
    """One finished map: its application, node class, duration and the time-averaged container count of each
    application on its node while it ran (itself included)."""

    app: str
    node_class: str
    duration_s: float
    mix: dict[str, float]


@dataclass(frozen=True)
class Profile:
    """θ_j = (c_j CPU-seconds, d_j MB read+written) of an application's first map, and its memory per task."""

    cpu_s: float
    io_mb: float
    memory_mb: float


@dataclass
class Fit:
    """Result of :func:`fit_load_model`: λ per application and (α_c, α_d) per node class."""

    lam: dict[str, float] = field(default_factory=dict)
    alpha: dict[str, tuple[float, float]] = field(default_factory=dict)
    rmse: float = 0.0


def load_terms(observation: Observation, profiles: dict[str, Profile]) -> tuple[float, float] | None:
    """Eq 4.12's load regressors of one observation, c_j·L_c² and d_j·L_d² (j its application, the loads of
    the mix it ran in, §4.2.2); None while an application of its mix (or its own) has no profile yet."""
    if observation.app not in profiles or not all(a in profiles for a in observation.mix):
        return None
    mix_apps = list(observation.mix)
    c = np.array([profiles[a].cpu_s for a in mix_apps])
    d = np.array([profiles[a].io_mb for a in mix_apps])
    rc, rd = load_ratios(c, d)
    lc, ld = node_loads(np.array([observation.mix[a] for a in mix_apps]), rc, rd)
    p = profiles[observation.app]
    return p.cpu_s * lc**2, p.io_mb * ld**2


@dataclass(frozen=True)
class Columns:
    """The rows :func:`fit_columns` fits, oldest first, as arrays: each row's application (an index into the
    sorted ``apps``), node class (into the sorted ``classes``), duration and Eq 4.12's two load terms."""

    apps: list[str]
    group: npt.NDArray[np.intp]
    classes: list[str]
    row_class: npt.NDArray[np.intp]
    durations: Vector
    cpu_term: Vector
    io_term: Vector


def columns_of(observations: list[Observation], terms: list[tuple[float, float] | None]) -> Columns | None:
    """The observations with a positive duration and load terms (``terms[i]`` is :func:`load_terms` of
    ``observations[i]``), as :class:`Columns`; None if there are none."""
    rows = [
        (o.app, o.node_class, o.duration_s, t[0], t[1])
        for o, t in zip(observations, terms, strict=True)
        if o.duration_s > 0 and t is not None
    ]
    if not rows:
        return None
    app_of, class_of, duration_of, cpu_of, io_of = zip(*rows, strict=True)  # one column each
    apps = sorted(set(app_of))
    classes = sorted(set(class_of))
    a_col = {a: i for i, a in enumerate(apps)}
    class_index = {k: i for i, k in enumerate(classes)}
    return Columns(
        apps,
        np.array([a_col[a] for a in app_of]),
        classes,
        np.array([class_index[k] for k in class_of]),
        np.array(duration_of),
        np.array(cpu_of),
        np.array(io_of),
    )


def fit_load_model(
    observations: list[Observation],
    profiles: dict[str, Profile],
    fixed_alpha: dict[str, tuple[float, float]] | None = None,
    terms: list[tuple[float, float] | None] | None = None,
) -> Fit:
    """Least-squares fit of Eq 4.12 (minimum RMSE, §4.2.3) to ``observations`` (:func:`fit_columns`).
    Observations whose mix holds an application without a profile are skipped. ``terms``, if given, is
    :func:`load_terms` of each observation, in order."""
    if terms is None:
        terms = [load_terms(o, profiles) for o in observations]
    return fit_columns(columns_of(observations, terms), fixed_alpha)


def fit_columns(rows: Columns | None, fixed_alpha: dict[str, tuple[float, float]] | None = None) -> Fit:
    """Least-squares fit of Eq 4.12 (minimum RMSE, §4.2.3), linear in the unknowns: one λ_j per application
    (shared by every node class, I4-3) and α_c, α_d per node class. Rows: t = λ_app + α_c·c·L_c² + α_d·d·L_d².
    α's are kept ≥ 0 by pinning the most negative at 0 and refitting; a λ_j ≤ 0 is replaced by j's shortest
    observed time.

    ``fixed_alpha`` holds the node classes whose α's were fitted offline (§4.2.3): their load terms move to
    the target side and only λ (and the other classes' α's) are fitted, so that λ_j is j's observed times
    normalised to an unloaded node by the offline model (I4-7).

    The λ's are one-way fixed effects, so the fit is solved by Frisch-Waugh-Lovell
    (:func:`_solve_fixed_effects`): linear in rows, where a design with one column per application was cubic in
    them on a window of a few hundred jobs."""
    fixed = fixed_alpha or {}
    if rows is None:
        return Fit(alpha={k: (float(v[0]), float(v[1])) for k, v in fixed.items()})
    apps, group, durations, cpu_term, io_term = (
        rows.apps,
        rows.group,
        rows.durations,
        rows.cpu_term,
        rows.io_term,
    )
    classes = [k for k in rows.classes if k not in fixed]
    k_col = {k: 2 * i for i, k in enumerate(classes)}
    fixed_c = np.array([fixed[k][0] if k in fixed else 0.0 for k in rows.classes])[rows.row_class]
    fixed_d = np.array([fixed[k][1] if k in fixed else 0.0 for k in rows.classes])[rows.row_class]
    target = durations - (fixed_c * cpu_term + fixed_d * io_term)
    load = np.zeros((len(durations), 2 * len(classes)))
    col = np.array([k_col.get(k, -1) for k in rows.classes])[rows.row_class]
    free = col >= 0
    load[free, col[free]] = cpu_term[free]
    load[free, col[free] + 1] = io_term[free]
    active = np.ones(load.shape[1], dtype=bool)
    alphas = np.zeros(load.shape[1])
    for _ in range(load.shape[1] + 1):  # α ≥ 0 (digest §4.1.4): pin the most negative α at 0 and refit
        alphas[:] = 0.0
        lam, alphas[active] = _solve_fixed_effects(group, len(apps), load[:, active], target)
        if not np.any(alphas < 0):
            break
        worst = int(np.argmin(alphas))
        active[worst] = False
    residual = lam[group] + load @ alphas - target
    shortest = np.full(len(apps), np.inf)
    np.minimum.at(shortest, group, durations)
    alpha = {k: (float(alphas[k_col[k]]), float(alphas[k_col[k] + 1])) for k in classes}
    alpha.update({k: (float(v[0]), float(v[1])) for k, v in fixed.items()})
    return Fit(
        # λ_j ≤ 0 (the load term over-explains j's times) would make j worthless in Eq 4.16 for ever: use
        # j's shortest observed time instead, an upper bound of its unloaded time.
        lam={a: float(lam[i]) if lam[i] > 0 else float(shortest[i]) for i, a in enumerate(apps)},
        alpha=alpha,
        rmse=float(np.sqrt(np.mean(residual**2))),
    )


def _solve_fixed_effects(
    group: npt.NDArray[np.intp], groups: int, load: Vector, target: Vector
) -> tuple[Vector, Vector]:
    """The minimum-norm least squares of target ≈ λ[group] + load·α (what one ``np.linalg.lstsq`` on the design
    [group indicators | load] gives), by Frisch-Waugh-Lovell: α from the within-group (demeaned) regression,
    then λ_g = mean over g of (target − load·α), in O(rows × columns) instead of a design with a column per
    group.

    The demeaned loads are often rank-deficient: a class whose every job ran one map (or ran them all at one
    load) has all-zero demeaned columns. Its α is then not identified, and every α + V·z (V spanning the
    demeaned loads' null space) with λ = λ₀ − M·V·z (M the group means of the loads) fits equally well; the
    full design's minimum-norm solution is the z minimising |λ|² + |α|², a least squares with one column per
    null direction."""
    counts = np.bincount(group, minlength=groups).astype(np.float64)

    def group_mean(values: Vector) -> Vector:
        return np.bincount(group, weights=values, minlength=groups) / counts

    if load.shape[1] == 0:
        return group_mean(target), np.zeros(0)
    means = np.column_stack([group_mean(column) for column in load.T])
    centred_load = load - means[group]
    u, singular, vt = np.linalg.svd(centred_load, full_matrices=False)
    # numpy's lstsq cut-off for "zero" singular values (rcond=None)
    identified = singular > singular.max(initial=0.0) * max(centred_load.shape) * np.finfo(np.float64).eps
    centred_target = target - group_mean(target)[group]
    alpha = vt[identified].T @ ((u[:, identified].T @ centred_target) / singular[identified])
    lam = group_mean(target - load @ alpha)
    if not identified.all():
        null = vt[~identified].T
        moves = means @ null
        z, *_ = np.linalg.lstsq(np.vstack([moves, -null]), np.concatenate([lam, alpha]), rcond=None)
        alpha = alpha + null @ z
        lam = lam - moves @ z
    return lam, alpha
