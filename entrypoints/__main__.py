"""``python -m ironhive``: the same as the ``ironhive`` command."""

from __future__ import annotations

from ironhive.cli.main import main

raise SystemExit(main())
