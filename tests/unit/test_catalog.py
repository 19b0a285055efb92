"""Node classes, applications and cluster files load, and mistakes are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from mrsched.core.catalog import CatalogError, load_cluster_layout, node_class, node_classes


def test_table_3_1_classes_carry_the_thesis_values() -> None:
    new = node_class("gupta-new").physics
    assert (new.cpu_rate, new.disk_rate, new.overhead_s) == (7.5, 2.5, 5.3)
    assert all(c.source for c in node_classes().values())


def test_default_cluster_is_heterogeneous() -> None:
    layout = load_cluster_layout()
    classes = {g.node_class for g in layout.nodes}
    assert len(classes) >= 3 and len({g.zone for g in layout.nodes}) >= 2


def test_a_typo_in_a_cluster_file_names_the_known_classes(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("nodes: [{class: smal, count: 1}]\n")
    with pytest.raises(CatalogError, match=r"unknown node class 'smal'; known classes: .*small"):
        load_cluster_layout(path)
    path.write_text("nodes: [{class: small, count: 0}]\n")
    with pytest.raises(CatalogError, match="count"):
        load_cluster_layout(path)
