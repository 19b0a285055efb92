"""Seed 000's learning scheduler: pattern classification for task assignment (Dhok & Varma; digest
dhok-varma.md).

Per heartbeat of node n (:meth:`Learning.assign`, digest §1.5):

1. **Supervise.** Every pending decision of n (a task this policy assigned at n's previous heartbeat) is
   labelled by the overload rule on *this* heartbeat's metrics: y = 0 (bad) iff load1/cores > θ (strict,
   Sec. V-B), else 1; the labelled example updates the one global classifier (A4) and the decision log.
   Only assignments produce examples; a decision made at the same time stamp is not judged yet (the next
   heartbeat must come later).
2. **Assign**, up to k times (k = 1 in the paper; no slot limit, the learner ignores ``map_slots``; on a
   by-requests node [Kubernetes, ours] only candidates whose pod request fits what the node has left):
   candidates are one (job, map) per job with a pending map and one (job, reduce) per job whose reduces are
   allowed and pending (A5); each is labelled by the classifier from its features F
   (:mod:`~mrsched.policies.learning.features`); among the *good* ones with U > 0 the one with the largest
   E.U. = U(J)·P(good|F) (Eq 1) is chosen — with ``score: unnormalised`` the paper's D4, U·P(good)·ΠP(F_i|good),
   instead (A1) — and a task of it placed: a map with the best locality (Hadoop's rule after the job choice,
   §3.8), or its reduce. The decision (features) waits in pending[n].

Classifiers: Naive Bayes (default, the one the paper evaluates; D2-D4) or the perceptron (D5, D6); see
:mod:`~mrsched.policies.learning.classifiers`. With the perceptron there is no probability: among good
candidates the largest U wins, ties by margin W·F + b, then submission order (§1.7). Utilities:
:mod:`~mrsched.policies.learning.utilities`.

Metrics fallback [ours, the paper assumes the heartbeat always carries the node's state]: a node whose metrics
are not fresh, or whose load1 is unknown, is unknown to the classifier. Nothing is judged or decided on it;
the composed :class:`~mrsched.policies.hadoop.fair.Fair` policy places within the node's configured slots. Its
pending decisions wait for fresh metrics, and are dropped unjudged after ``MAX_WAIT_S`` seconds without
them (a label read minutes later would no longer say what the task did to the node).

Idle-node exploration [ours; ``idleExploration``, default on]: if no candidate is good while the node runs no
task at all and is not overloaded, the best candidate by E.U. is assigned anyway (said so in the explanation).
Without it the learner can deadlock after its first examples, as at cold start (A3, §3.4): once every
candidate on an idle node is labelled bad nothing is assigned there, no example is produced, and the idle
state never changes, so the label never changes either — jobs would wait for ever on an idle cluster. An idle,
underloaded node is the one state in which one task cannot be the cause of an overload the rule already saw.

Accuracy (Fig. 10): the fraction of judged decisions whose prediction was confirmed by the overload rule
(*good* and no overload; an exploration's *bad* and an overload), reported per window of 250 decisions.

**On Kubernetes** [ours]: the paper decides one task per heartbeat by the classifier and
knows no slots: the overload rule is its only concurrency limit. By requests a candidate is offered only
where its pod fits what the node has left, so the classifier decides how far below the requests a node runs.
"""

from mrsched.policies.learning.config import MAX_WAIT_S, Decision, LearningConfig
from mrsched.policies.learning.policy import Learning

__all__ = ["MAX_WAIT_S", "Decision", "Learning", "LearningConfig"]
