"""DARA, the Dynamically Adapting Resource-Aware scheduler (seed 002, Gupta thesis, chapter 4).

DARA sets, per node, how many map containers each running application gets, so that the node's predicted
throughput is greatest, and then fills each node towards that mix.

* Throughput (Eq 4.2-4.11): work is map tasks weighted by their size λ_j (unloaded time), so the predicted
  throughput of a container vector x on one node is Σ_j λ_j x_j / t_j (Eq 4.9, per node Eq 4.16).
* Loads: R_c^j = c^j/(c^j+d^j), R_d^j = d^j/(c^j+d^j) (§4.2.2), with c in CPU-seconds and d in MB read+written
  (the tables' units, digest §4.1.3); L_c = Σ_j R_c^j x_j, L_d = Σ_j R_d^j x_j over **all** containers of
  the candidate vector (I4-2).
* Load-dynamic model (Eq 4.12): t_j = λ_j + c_j α_c L_c² + d_j α_d L_d². α_c, α_d belong to a node class (the
  thesis fits them per machine, offline); λ_j is shared by every node (I4-3).
* Per-node exhaustive search (Eq 4.14-4.16, COMPUTE_OPTIMAL_ASSIGNMENT) over integer vectors with
  Σ_j mem_j x_j < node memory (strict, as the thesis states).
* ADD_APPLICATION (Alg 4.3.1) when an application's first map task has been measured, REMOVE_APPLICATION
  (Alg 4.3.2) when it leaves; both recompute x* for every node.
* DARA_SCHEDULE (Alg 4.3.3): locality tiers local, rack, off-switch; inside the first tier that has an
  application with a positive deficit, BEST_APP_TO_ADD (Alg 4.3.4) picks argmax_A (x*_A − x_A). Running
  tasks are never preempted.

Readings and approximations (the thesis is silent or the simulator differs):

* π^M = (α_c, α_d) per node class is fitted **offline** in the thesis (§4.2.3, Table 4.1's training mixes) and
  never stated. Classes listed in the ``alphas`` option count as fitted from the start, and only λ_j is learned
  online (bench/scenarios/dara-wl*.yaml pass :data:`OFFLINE_ALPHAS`). For ``dara-8core`` the α's are
  calibrated so that Eq 4.16 gives Table 4.2's single-application optima (Pi 12, Sort 7, WordCount 14;
  RandomWriter 5 instead of 3) with the λ, c, d this simulator measures (digest §4.1.5: "use these relations
  to calibrate"). The thesis's own procedure, a least-RMSE fit of Eq 4.12 to Table 4.1's training mixes at 2-16
  parallel maps, run on this physics (``make bench-dara-alpha``, bench/results/dara-alpha-fit.txt), gives much
  smaller α's (0.0019, 0.0013; RMSE 34 %) and optima far past the knee (Pi 36): the simulated slowdown past
  the core count is linear (processor sharing), much milder than the thesis's data imply.
* Other node classes learn α **online** from task outcomes: every successful map gives one observation (its
  duration, the time-averaged number of map containers of each application on its node during its life,
  including itself); λ_j and α_c, α_d are fitted jointly by least squares (Eq 4.12 is linear in them), α ≥ 0.
  Such a class counts as fitted once it holds ``minObservations`` observations spread over at least
  ``minLoadSpread`` containers of load. **Until then the composed Fair policy schedules its nodes**
  (:class:`~mrsched.policies.hadoop.fair.Fair`, maps and reduces). A fitted class saved by :meth:`Dara.state` comes
  back with its α's fixed. The thesis's own fallback (ThroughputScheduler when OS counters are missing)
  does not apply: the outcomes always carry CPU time and bytes.
* [Ours] The online fit is redone every ``refitEvery`` (25) observations, 5 while no class is fitted, and after
  the next observation whenever a job in the optimisation has no λ yet; past ``refitNodes`` (100) nodes each
  count is scaled by nodes / refitNodes, since observations arrive in proportion to the nodes: the refit keeps
  one rate per simulated second instead of one per observation (at 1,000 nodes unscaled, 37,000 refits were a
  fifth of DARA's SWIM day). Clusters of up to 100 nodes, every scenario of bench/scenarios, are unaffected.
* λ_j (I4-7, ``lambdaFrom: profile``): the profiling map's duration minus Eq 4.12's load term at the mix it
  ran in, measured once; floored at the map's CPU-seconds (a map cannot finish faster than its CPU time),
  which binds when the profiling map ran on a crowded node. ``lambdaFrom: fit`` refits λ from every
  observation instead.
* θ_j = (c_j, d_j) comes from the application's **first** finished map (OS counters, Alg 4.3.1). Memory per
  map (the cap) should be that map's peak RSS; TaskOutcome carries none, so it is ``taskMemoryMB`` if set,
  else the application's catalog RAM (Table 4.1/2.1's column), else the job's container request.
* An application takes part in the optimisation while it has unfinished maps (DARA optimises maps only);
  before its first map is measured it gets x* = 0 and one profiling map is launched as soon as a node has
  spare memory (I4-6). ``fairWhileProfiling: true`` also lets Fair start its maps in free ordinary slots.
* DARA_SCHEDULE launches **one** map per heartbeat and node (Alg 4.3.3: one task per request;
  ``assignMultiple: true`` fills the node to Σ x* at once).
* Node concurrency is Σ_j x*_j (I4-5): a node accepts a map only while its DARA maps number fewer than
  Σ x* and only for an application with a positive deficit. ``literal: true`` keeps the pseudocode's
  reading instead (the node's map slots bound concurrency and the tier's argmax is taken whatever its sign).
  A node whose x* is 0 for every application and that runs no map is handed to Fair, so that pending maps
  cannot wait for ever.
* The search bounds each x_j by the memory cap and by ``boundFactor`` × the single-application optimum
  sqrt(λ_j/K_j) (+2), K_j = c α_c R_c² + d α_d R_d² (digest §4.1.5/4.1.6). This is an approximation: the
  argmax equals plain enumeration whenever the optimum lies inside the bound.
* [Ours] The enumeration grows exponentially with the applications mixed (WL14's five already reach
  two million vectors; a whole SWIM day mixes dozens of jobs). ``exhaustiveLimit`` (200,000 by default, in the
  operator and the simulator alike; null is the thesis's unbounded search) caps it: past that many vectors x*
  comes from a local search (``search.local_search``), and the placement's explanation says so. Its gap where
  both run: bench/results/dara-search-gap.txt.
* Reduces stay with the FairScheduler that DARA extends (the composed Fair policy's order, one per
  heartbeat), as DARA optimises maps only.

**On Kubernetes** [ours]: chapter 4 decides each node's mix x* (how many containers of each
application) under the memory cap of §4.3.1. By requests the mix also keeps to the node's cores by each
application's CPU request (:func:`feasible_vectors`), so x* is a mix the kubelet admits, and the node runs x*'s
sum: fewer than its requests allow wherever Eq 4.12 predicts that one more container lowers its throughput.
That sum is all x* holds back (:meth:`Dara._work_conserving`): x*'s deficits are filled first, one a heartbeat
as Alg 4.3.3 places them, and the rest of the sum at once by the composed Fair's jobs, so that containers x*
gives a job with no map left to start, or that one-a-heartbeat leaves, go to the next job (on
gupta-ch3-pi-jio, seed 1, x*'s reservation alone had held 9 of 28 pods idle for 866 s). The exceptions are
measured: before an application's first map is measured (Alg 4.3.1) x* holds nothing, and a node of a class
with no fitted load model gets the composed Fair's one map a heartbeat, so that α's online fit sees a spread
of loads.
The mix is over every running job, as the thesis's; ``shortestFirst`` (ours, off: measured not to carry over
to scenarios it was not chosen on, :meth:`Dara._window`) mixes only the jobs with the least work left.
``reuseProfiles`` (ours, on by requests): a job of an application measured earlier in the run starts from its
θ and λ with no profiling map of its own, as a restarted operator's jobs start from saved state (the thesis
profiles every YARN application, i.e. job). Measured: seed 003's 22 jobs' mean job time 164 -> 158
s, three generations' 33.9 -> 30.2 s, no held-out scenario longer. Mixing by application name instead (one x*
per application, its earliest job served first) shortened seed 003's to 137 s but lengthened WL13's 1246 ->
1407 s and 4 of the 18 held-out scenarios': not built.

The modules: the policy is a chain of classes, each subclassing the one before (each calls only what its own
module and those before it define), the last of them the registered :class:`Dara`.

* ``config``: the options (:class:`DaraConfig`) and constants (:data:`OFFLINE_ALPHAS`, ``MB``).
* ``model``: Eq 4.9-4.12's loads, task times and throughputs, Alg 4.3.4, the least squares of Eq 4.12.
* ``search``: Eq 4.16's search (COMPUTE_OPTIMAL_ASSIGNMENT), exhaustive or, past ``exhaustiveLimit``, local.
* ``window``: the refit's sliding window of observations, kept as arrays.
* ``base``: ``DaraBase``, every attribute the chain reads (``__init__``), x*'s accessor, and ``_NodeClock``.
* ``learner``: ``DaraLearner``, online learning: the outcome hooks, the refit, λ_j from the profiling map.
* ``state``: ``DaraState``, persistence: ``state``, ``load_state`` and the jobs that start from saved θ and λ.
* ``optimiser``: ``DaraOptimiser``, Alg 4.3.1/4.3.2: the members, x* per node, Eq 4.16's search options.
* ``scheduling``: :class:`Dara`, Alg 4.3.3/4.3.4: the placements, profiling maps, the Fair fallback, reduces.
"""

from mrsched.policies.dara.config import OFFLINE_ALPHAS, DaraConfig
from mrsched.policies.dara.scheduling import Dara

__all__ = ["OFFLINE_ALPHAS", "Dara", "DaraConfig"]
