"""DARA's window of observations as arrays (issue 24) gives the least squares exactly the rows a rebuild from
the observations gives, as the window slides, as profiles arrive late, and when the deque is changed behind it."""

from __future__ import annotations

import random
from collections import deque

import numpy as np

from mrsched.policies.dara.model import Columns, Observation, Profile, columns_of, load_terms
from mrsched.policies.dara.window import FitWindow


def same(a: Columns | None, b: Columns | None) -> bool:
    if a is None or b is None:
        return a is b
    return (
        a.apps == b.apps
        and a.classes == b.classes
        and all(
            np.array_equal(x, y)
            for x, y in [
                (a.group, b.group),
                (a.row_class, b.row_class),
                (a.durations, b.durations),
                (a.cpu_term, b.cpu_term),
                (a.io_term, b.io_term),
            ]
        )
    )


def test_the_window_holds_the_same_rows_as_its_observations() -> None:
    rng = random.Random(3)
    apps = [f"j{i}" for i in range(40)]
    profiles: dict[str, Profile] = {}
    observations: deque[Observation] = deque(maxlen=50)
    window = FitWindow(50)
    for step in range(400):
        if step % 7 == 0:  # profiles arrive as jobs' first maps finish, some after their neighbours' maps
            app = rng.choice(apps)
            profiles.setdefault(app, Profile(rng.uniform(1, 30), rng.uniform(0, 500), 1024.0))
        app = rng.choice(apps)
        mix = {b: rng.uniform(0.5, 4.0) for b in rng.sample(apps, 2)} | {app: 1.0 + rng.random()}
        duration = rng.choice([0.0, rng.uniform(5, 100)]) if step % 11 == 0 else rng.uniform(5, 100)
        observation = Observation(app, f"k{step % 3}", duration, mix)
        observations.append(observation)
        window.append(observation, profiles)
        if step % 5 == 0:
            window.sync(observations, profiles)
            rebuilt = columns_of(list(observations), [load_terms(o, profiles) for o in observations])
            assert same(window.columns(), rebuilt)
            for cls in ("k0", "k1", "k2"):
                totals = [sum(o.mix.values()) for o in observations if o.node_class == cls]
                assert window.class_loads(cls).tolist() == totals
    # changed behind its back (a test, a restore): rebuilt from the deque
    observations.appendleft(Observation("j0", "k0", 9.0, {"j0": 1.0}))
    window.sync(observations, profiles)
    assert same(
        window.columns(), columns_of(list(observations), [load_terms(o, profiles) for o in observations])
    )
