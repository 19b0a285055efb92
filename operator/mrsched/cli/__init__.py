"""The ``mrsched`` command (the console script and ``python -m mrsched``): :func:`main`.

``parser`` builds the subcommands' parsers (its docstring is ``mrsched --help``'s), ``commands`` runs them, and
``operator_flags`` makes ``mrsched run``'s operator flags from :class:`~mrsched.operator.model.config.OperatorConfig`.
"""

from __future__ import annotations

import sys

from mrsched.cli.parser import build_parser
from mrsched.clustersweep import SweepError
from mrsched.core.catalog import CatalogError
from mrsched.core.policy import PolicyConfigError
from mrsched.emulator.client import EmulatorError
from mrsched.localcluster.toolchain import ToolchainError
from mrsched.simulator.scenario import ScenarioError
from mrsched.simulator.traces import TraceError

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
    except (
        ToolchainError,
        CatalogError,
        FileExistsError,
        FileNotFoundError,
        EmulatorError,
        ScenarioError,
        PolicyConfigError,
        TraceError,
        SweepError,
    ) as err:
        print(f"mrsched: {err}", file=sys.stderr)
        code = 2
    sys.exit(code)
