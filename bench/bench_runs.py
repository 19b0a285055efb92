"""Print the (mode, scenario) runs ``make bench`` makes: each scenario in each of the requested modes that the
scenario lists (``modes:``; default: both), one ``<mode> <path>`` per line for xargs.

python bench/bench_runs.py --modes "hadoop kubernetes" bench/scenarios/*.yaml
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mrsched.simulator.scenario import load_scenario


def runs(paths: list[Path], modes: list[str]) -> list[tuple[str, Path]]:
    """The runs in scenario order, a scenario's modes in the order asked; a mode the scenario leaves out is
    skipped (its file says why)."""
    return [(mode, path) for path in paths for mode in modes if mode in load_scenario(path).modes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="hadoop kubernetes", help="space-separated placement modes")
    parser.add_argument("scenarios", nargs="+", type=Path)
    args = parser.parse_args()
    for mode, path in runs(args.scenarios, args.modes.split()):
        print(mode, path)


if __name__ == "__main__":
    main()
