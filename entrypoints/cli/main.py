"""The ``ironhive`` console script: ``--version`` at once, a non-interactive run to the warm process, else the CLI."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: the process arguments) and return its exit code."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from ironhive import __version__

        sys.stdout.write(f"ironhive {__version__}\n")
        return 0
    if argv is not None:  # called in-process: run here, never hand this process's descriptors elsewhere
        return run_direct(args)
    from ironhive.daemon.client import run

    return run(args, direct=run_direct)


def run_direct(args: list[str]) -> int:
    """Run the CLI in this process and return its exit code."""
    from ironhive.cli.app import run_app

    return run_app(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
