"""The scheduling framework every policy runs in, shaped like kube-scheduler's (pure, synchronous; the operator
and the simulator both call it):

- **Filter** (:mod:`.filters`): Kubernetes' own rules decide which nodes may take a job's pods (taints and
  tolerations, node selectors, unschedulable nodes) before any policy looks:
  :meth:`Framework.feasible` sets :attr:`~mrsched.core.model.Job.nodes`, which
  :meth:`~mrsched.core.model.ClusterSnapshot.fits` enforces with NodeResourcesFit's request check.
- **Queue sort and Score**: which job or task next, and which feasible node, with its explanation. A policy
  that is a plugin set (:class:`.profile.PluginPolicy`: QueueSort, its own Filter, weighted Score and Permit
  plugins, run one task at a time as kube-scheduler's cycle) has them as plugins; a policy that decides per
  heartbeat as Hadoop 1 did writes them in its :meth:`~mrsched.core.policy.Policy.assign` or
  :meth:`~mrsched.core.policy.Policy.schedule_round`.
- **Reserve / Unreserve** (:meth:`~mrsched.core.model.ClusterSnapshot.commit` / :func:`.framework.unreserve`):
  a placement holds its node's capacity for the rest of the round at once; one a Permit plugin refuses gives
  it back.
- **Permit** (:mod:`.permit`): whether a node runs a reserved placement now (a canary node: one map at a time).
- **Bind**: the owner's: the operator creates the pod with ``spec.nodeName``, the simulator starts the attempt.
"""

from mrsched.core.framework.filters import (
    DEFAULT_FILTERS,
    FilterPlugin,
    NodeAffinity,
    NodeUnschedulable,
    NodeView,
    PodConstraints,
    TaintToleration,
)
from mrsched.core.framework.framework import Framework, unreserve
from mrsched.core.framework.permit import OneMapPerRound, PermitPlugin
from mrsched.core.framework.profile import (
    PluginPolicy,
    Profile,
    ProfilePermitPlugin,
    QueueSortPlugin,
    ScorePlugin,
    TaskFilterPlugin,
)

__all__ = [
    "DEFAULT_FILTERS",
    "FilterPlugin",
    "Framework",
    "NodeAffinity",
    "NodeUnschedulable",
    "NodeView",
    "OneMapPerRound",
    "PermitPlugin",
    "PluginPolicy",
    "PodConstraints",
    "Profile",
    "ProfilePermitPlugin",
    "QueueSortPlugin",
    "ScorePlugin",
    "TaintToleration",
    "TaskFilterPlugin",
    "unreserve",
]
