"""The soft-fault monitor: detection by continuous monitoring of per-resource slowdown (seed 002, Gupta
thesis §5.3, "Method B"); not a placement policy, used by the operator and the simulator.

A map task of application i takes ``T = θc γc + θd γd + Ω`` on node j (Eq 5.9/5.10), where θ = (θc, θd) is the
app's work in reference seconds and γ = (γc, γd) = 1/κ the node's *slowdown* (a larger γ is a slower
resource). Observed times are Gaussian around it (Eq 5.11/5.12, with the exponent's minus sign restored,
digest I5-2). The joint posterior over (γ, θ) is approximated by a product of two bivariate Gaussians, one
per node and one per app, re-estimated alternately (Alg 5.3.1 MONITOR_CLUSTER), each update using the *means*
of the other factor as fixed coefficients:

* θ of app i (:class:`AppBelief`): feature a = γ̄ of the node that ran the task, target y = T − Ω of that node
  (digest I5-3: Ω^k of the node of each observation). A new app starts uninformative (zero precision): one
  observation gives a tube, observations on nodes with different γc/γd ratios an ellipse (§5.3.2).
* γ of node j (:class:`SlowdownBelief`): feature a = θ̄ of the app, same target. Its prior is the node's
  probed γ (P5-C, Eq 5.16-5.18, here :mod:`mrsched.core.probes` with γ = 1/κ); the posterior is carried
  forward as the next prior (Alg 5.3.1 step 2c).

Both updates are the linear-Gaussian (conic, information-form) update of Eq 5.14/5.15: ``Λ ← Λ + a aᵀ/σ²``,
``h ← h + y a/σ²`` (the true precision; Eq 5.15 prints half of it, the same factor-2 convention as Eq 3.22).

Ch.5 has no forgetting, yet its γ estimates fall again when the load ends, so old evidence must be discounted:
before each γ update the belief goes through chapter 6's random walk ``Π^{t+1} = Π^t + V_m`` (Eq 6.7/6.8),
``V_low`` normally and ``V_high`` when a change detector fires (m = 1). :class:`SlowdownMonitor` runs
Alg 5.3.1 incrementally, one finished map at a time, and turns the γ posterior into a verdict per node.

Readings where the thesis is silent ([R], digest gupta-thesis.md §5.1.3 and I6-2) are the documented fields of
:class:`MonitorConfig`. Pure and synchronous: no Kubernetes here (the edge is :mod:`mrsched.operator.learning.health`).
"""

from mrsched.health.beliefs import AppBelief, SlowdownBelief, profile_key
from mrsched.health.config import MonitorConfig, NodeHealth
from mrsched.health.monitor import SlowdownMonitor

__all__ = ["AppBelief", "MonitorConfig", "NodeHealth", "SlowdownBelief", "SlowdownMonitor", "profile_key"]
