"""Test-wide settings: no ``ironhive`` process a test starts gets the warm process unless the test asks for one."""

from __future__ import annotations

import os

# Inherited by every subprocess (tests/support/cli.py copies os.environ): a developer's run of the suite must not leave
# warm processes behind, as CI (where CI=true) never would. tests/e2e/test_warm_daemon.py turns it on per run.
os.environ["IRONHIVE_DAEMON"] = "0"
