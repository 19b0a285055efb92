"""The two online classifiers of seed 000 (Dhok & Varma, Sec. IV-C/D; digest §1.6, §1.7): Naive Bayes over
categorical features and the perceptron. Both learn one labelled example at a time (y = 1 good, 0 bad) and
label a candidate *good* or *bad*; one global instance serves every node (A4).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.naive_bayes import CategoricalNB

from mrsched.policies.learning_features import CARDINALITIES, N_FEATURES, Features

Vector = npt.NDArray[np.float64]


class NaiveBayes:
    """Naive Bayes (D2-D4) on scikit-learn's ``CategoricalNB(alpha=1)``, updated by ``partial_fit``.

    Likelihoods: ``P(F_i = v | c) = (N_c,i,v + 1) / (N_c + |V_i|)`` (Laplace; ``min_categories`` fixes |V_i|
    so unseen bins are valid) — exactly ``CategoricalNB.feature_log_prob_``. Prior: the smoothed
    ``P(c) = (N_c + 1) / (N + 2)`` is computed **here, by hand** (digest §1.6): scikit-learn's own prior is
    the unsmoothed N_c/N (−∞ for a class not yet seen), so it is switched off (``fit_prior=False``) and never
    used; we combine its log-likelihoods with our prior ourselves.

    Before any example P(good|F) = 0.5, and a tie counts as good (A3), so the cold start assigns.
    """

    name = "naive-bayes"

    def __init__(self) -> None:
        self.model: CategoricalNB | None = None

    def _new_model(self) -> CategoricalNB:
        return CategoricalNB(alpha=1.0, fit_prior=False, min_categories=np.array(CARDINALITIES))

    @property
    def class_counts(self) -> tuple[float, float]:
        if self.model is None:
            return 0.0, 0.0
        counts = self.model.class_count_
        return float(counts[0]), float(counts[1])

    def log_joint(self, f: Features) -> tuple[float, float]:
        """(log P(bad)ΠP(F_i|bad), log P(good)ΠP(F_i|good)) — D3 with the smoothed prior."""
        n_bad, n_good = self.class_counts
        total = n_bad + n_good
        out = []
        for c, n_c in ((0, n_bad), (1, n_good)):
            log_p = math.log((n_c + 1.0) / (total + 2.0))
            if self.model is not None:
                log_p += sum(float(self.model.feature_log_prob_[i][c, v]) for i, v in enumerate(f.categories))
            else:  # no example yet: every likelihood is 1/|V_i| for both classes
                log_p -= sum(math.log(k) for k in CARDINALITIES)
            out.append(log_p)
        return out[0], out[1]

    def p_good(self, f: Features) -> float:
        """Normalised posterior P(good|F) (Eq 1 with the denominator kept, A1)."""
        bad, good = self.log_joint(f)
        return 1.0 / (1.0 + math.exp(bad - good)) if bad - good < 700 else 0.0

    def is_good(self, f: Features) -> bool:
        """Labelling rule (Sec. IV-C): good iff P(good|F) ≥ P(bad|F) (tie → good, A3)."""
        bad, good = self.log_joint(f)
        return good >= bad

    def update(self, f: Features, y: int) -> None:
        self.update_many([f.categories], [y], [1.0])

    def update_many(self, rows: list[tuple[int, ...]], ys: list[int], weights: list[float]) -> None:
        if not rows:
            return
        if self.model is None:
            self.model = self._new_model()
        x = np.array(rows, dtype=np.int64)
        self.model.partial_fit(x, np.array(ys), classes=np.array([0, 1]), sample_weight=np.array(weights))

    def state(self) -> dict[str, Any]:
        """Counts: N_c and, per feature, per class, the category counts N_c,i,v (integers)."""
        if self.model is None:
            return {"class": [0, 0], "features": []}
        return {
            "class": [round(float(n)) for n in self.model.class_count_],
            "features": [[[round(float(n)) for n in row] for row in cc] for cc in self.model.category_count_],
        }

    def load(self, saved: dict[str, Any]) -> None:
        """Rebuild from :meth:`state` through ``partial_fit`` alone (public API): per class, each feature's
        counts are a multiset of N_c values; walking all features' run-lengths together yields weighted rows
        whose marginal counts are exactly the saved ones, hence the same posteriors."""
        self.model = None
        classes = [int(n) for n in saved.get("class", [0, 0])]
        table = saved.get("features") or []
        if sum(classes) == 0 or len(table) != N_FEATURES:
            return
        rows: list[tuple[int, ...]] = []
        ys: list[int] = []
        weights: list[float] = []
        for c, n_c in enumerate(classes):
            runs = [[(v, int(n)) for v, n in enumerate(table[i][c]) if int(n) > 0] for i in range(N_FEATURES)]
            if n_c == 0:
                continue
            if any(sum(n for _, n in r) != n_c for r in runs):
                raise ValueError("saved Naive Bayes counts are inconsistent with the class counts")
            pos = [0] * N_FEATURES
            left = [r[0][1] for r in runs]
            remaining = n_c
            while remaining > 0:
                step = min(left)
                rows.append(tuple(runs[i][pos[i]][0] for i in range(N_FEATURES)))
                ys.append(c)
                weights.append(float(step))
                remaining -= step
                for i in range(N_FEATURES):
                    left[i] -= step
                    if left[i] == 0 and pos[i] + 1 < len(runs[i]):
                        pos[i] += 1
                        left[i] = runs[i][pos[i]][1]
        self.update_many(rows, ys, weights)


class Perceptron:
    """The perceptron of Sec. IV-D: c(F) = 1 iff W·F + b > 0 (D5, equality = bad); on a mistake only,
    w_j ← w_j + α(y − c(F))F_j (D6) with α = 1 and W initialised to 0. b learns as the weight of a constant
    input 1 (digest §1.7's standard reading) and starts at ``initial_bias`` > 0, so that the untrained
    perceptron says *good* and the cold-start trap (W = 0, b = 0 ⇒ nothing ever assigned) cannot happen.

    Hand-written (numpy) rather than scikit-learn's ``Perceptron``: under ``partial_fit`` the latter cannot
    start from a positive bias, and it predicts the positive class at W·F + b = 0 only by its own sign rule,
    not D5's "equality = bad"; both properties are what the paper's rule and the cold start need.
    """

    name = "perceptron"

    def __init__(self, initial_bias: float = 0.1, alpha: float = 1.0) -> None:
        self.w: Vector = np.zeros(N_FEATURES)
        self.b = initial_bias
        self.alpha = alpha
        self.updates = 0

    def margin(self, f: Features) -> float:
        return float(self.w @ np.asarray(f.scaled)) + self.b

    def is_good(self, f: Features) -> bool:
        return self.margin(f) > 0.0  # D5: equality is bad

    def p_good(self, f: Features) -> float:
        """No probability (§1.7): c(F) ∈ {0, 1}."""
        return 1.0 if self.is_good(f) else 0.0

    def update(self, f: Features, y: int) -> None:
        """D6, applied only when the current prediction is wrong."""
        c = 1 if self.is_good(f) else 0
        if c == y:
            return
        step = self.alpha * (y - c)
        self.w = self.w + step * np.asarray(f.scaled)
        self.b += step
        self.updates += 1

    def state(self) -> dict[str, Any]:
        return {"w": [float(v) for v in self.w], "b": float(self.b), "updates": self.updates}

    def load(self, saved: dict[str, Any]) -> None:
        w = saved.get("w")
        if isinstance(w, list) and len(w) == N_FEATURES:
            self.w = np.array([float(v) for v in w])
            self.b = float(saved.get("b", self.b))
            self.updates = int(saved.get("updates", 0))
