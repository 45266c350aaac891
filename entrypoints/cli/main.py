"""The ``ironhive`` console script: answers ``--version`` without importing anything, then hands over to the CLI."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: the process arguments) and return its exit code."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from ironhive import __version__

        sys.stdout.write(f"ironhive {__version__}\n")
        return 0
    from ironhive.cli.app import run_app

    return run_app(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
