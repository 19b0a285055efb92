"""Learned state as custom resources: ``NodeProfile``, ``AppProfile`` and ``PolicyProfile`` (cluster-scoped,
``crds/``).

What the operator learns (probed node capabilities; each policy's per-application, per-node-class, per-node and
policy-wide state) lives in these resources' status, not in files: ``kubectl get
nodeprofiles,appprofiles,policyprofiles`` shows it, and a restarted operator reads it back before its first
round, so that it does not relearn from zero.

A policy's ``state()`` has the shape ``{"apps": {app: fields}, "nodeClasses": {class: fields}, "nodes": {node:
fields}, "policy": fields}`` (see :meth:`mrsched.core.policy.Policy.state`): each app's fields go to
``AppProfile/<app>`` at ``status.policies.<policy>``; each node class's to the ``NodeProfile`` of every node of
that class at the same path, and each node's to its own ``NodeProfile`` there (a node's own entry wins over its
class's); the policy-wide fields to ``PolicyProfile/<policy>`` at ``status.state``. Only what changed since the
last write is written.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from mrsched.core.model import Node
from mrsched.core.probes import Capability
from mrsched.operator.kube.kubeapi import ClusterApi

NODE_PLURAL, NODE_KIND = "nodeprofiles", "NodeProfile"
APP_PLURAL, APP_KIND = "appprofiles", "AppProfile"
POLICY_PLURAL, POLICY_KIND = "policyprofiles", "PolicyProfile"

log = logging.getLogger(__name__)


def utc_stamp(now: float) -> str:
    """A status timestamp (RFC 3339, UTC, whole seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


class ProfileStore:
    """The operator's copy of every profile's status, and the writes that keep the resources up to date."""

    def __init__(self, api: ClusterApi, clock: Any = time.time) -> None:
        self.api = api
        self.clock = clock
        self.nodes: dict[str, dict[str, Any]] = {}  # node name -> NodeProfile status
        self.apps: dict[str, dict[str, Any]] = {}  # app -> AppProfile status
        self.policies: dict[str, dict[str, Any]] = {}  # policy -> PolicyProfile status
        self.uids: dict[str, str] = {}  # node name -> its NodeProfile's uid
        self._written: dict[tuple[str, str, str], str] = {}  # (plural, name, policy) -> last JSON written

    def load(self) -> None:
        """Read every profile (once, at start-up; afterwards this operator is the only writer)."""
        for body in self.api.list_profiles(NODE_PLURAL):
            name = body["metadata"]["name"]
            self.nodes[name] = body.get("status") or {}
            self.uids[name] = body["metadata"]["uid"]
        for body in self.api.list_profiles(APP_PLURAL):
            self.apps[body["metadata"]["name"]] = body.get("status") or {}
        for body in self.api.list_profiles(POLICY_PLURAL):
            name = body["metadata"]["name"]
            self.policies[name] = status = body.get("status") or {}
            if isinstance(status.get("state"), dict):
                self._written[(POLICY_PLURAL, name, name)] = json.dumps(status["state"], sort_keys=True)
        for plural, statuses in ((NODE_PLURAL, self.nodes), (APP_PLURAL, self.apps)):
            for name, status in statuses.items():
                for policy, fields in (status.get("policies") or {}).items():
                    self._written[(plural, name, policy)] = json.dumps(fields, sort_keys=True)
        log.info(
            "read %d node profiles, %d app profiles and %d policy profiles",
            len(self.nodes),
            len(self.apps),
            len(self.policies),
        )

    # --- node capabilities (probes) -----------------------------------------------------------------------

    def capability(self, node: str) -> Capability | None:
        status = self.nodes.get(node) or {}
        if status.get("phase") != "Probed":
            return None
        try:
            return Capability(
                float(status["kappaC"]),
                float(status["kappaD"]),
                float(status["omegaS"]),
                float(status["sigmaS"]),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def write_node(self, node: str, fields: dict[str, Any]) -> str:
        """Merge ``fields`` into the node's profile status; returns the profile's uid."""
        uid = self.api.write_profile(NODE_PLURAL, NODE_KIND, node, {"nodeName": node}, fields)
        status = self.nodes.setdefault(node, {})
        policies = {**(status.get("policies") or {}), **(fields.get("policies") or {})}
        status.update(fields)
        if policies:
            status["policies"] = policies
        self.uids[node] = uid
        return uid

    # --- policies' learned state --------------------------------------------------------------------------

    def policy_state(self, policy: str) -> dict[str, Any]:
        """What ``policy`` saved before, in the shape its ``load_state`` takes."""
        apps = {
            app: fields
            for app, status in self.apps.items()
            if isinstance(fields := (status.get("policies") or {}).get(policy), dict)
        }
        classes: dict[str, Any] = {}
        nodes: dict[str, Any] = {}
        for name, status in self.nodes.items():
            fields = (status.get("policies") or {}).get(policy)
            if not isinstance(fields, dict):
                continue
            nodes[name] = fields
            if status.get("nodeClass") is not None:
                classes.setdefault(status["nodeClass"], fields)
        saved = (self.policies.get(policy) or {}).get("state")
        state: dict[str, Any] = {"apps": apps, "nodeClasses": classes, "nodes": nodes}
        if isinstance(saved, dict):
            state["policy"] = saved
        return state

    def save_policy_state(self, policy: str, state: Mapping[str, Any], nodes: Mapping[str, Node]) -> int:
        """Write what changed in ``state`` since the last write; returns the number of resources written."""
        now = utc_stamp(self.clock())
        writes = 0
        for app, fields in (state.get("apps") or {}).items():
            key, text = (APP_PLURAL, app, policy), json.dumps(fields, sort_keys=True)
            if self._written.get(key) != text:
                self.api.write_profile(
                    APP_PLURAL, APP_KIND, app, {"app": app}, {"policies": {policy: fields}, "updatedAt": now}
                )
                self.apps.setdefault(app, {}).setdefault("policies", {})[policy] = fields
                self._written[key] = text
                writes += 1
        own = state.get("nodes") or {}
        for cls, fields in (state.get("nodeClasses") or {}).items():
            text = json.dumps(fields, sort_keys=True)
            for name, node in nodes.items():
                key = (NODE_PLURAL, name, policy)
                if node.node_class == cls and name not in own and self._written.get(key) != text:
                    self.write_node(name, {"nodeClass": cls, "policies": {policy: fields}})
                    self._written[key] = text
                    writes += 1
        for name, fields in own.items():
            key, text = (NODE_PLURAL, name, policy), json.dumps(fields, sort_keys=True)
            if name in nodes and self._written.get(key) != text:
                self.write_node(name, {"nodeClass": nodes[name].node_class, "policies": {policy: fields}})
                self._written[key] = text
                writes += 1
        if isinstance(fields := state.get("policy"), dict) and fields:
            key, text = (POLICY_PLURAL, policy, policy), json.dumps(fields, sort_keys=True)
            if self._written.get(key) != text:
                self.api.write_profile(
                    POLICY_PLURAL,
                    POLICY_KIND,
                    policy,
                    {"policy": policy},
                    {"state": fields, "updatedAt": now},
                )
                self.policies.setdefault(policy, {})["state"] = fields
                self._written[key] = text
                writes += 1
        return writes
