"""Test-only hooks for the ledger's two-phase protocol (loaded through ``$DPADAPT_PLUGINS``).

Replaces :func:`dpadapt.privacy.ledger.checkpoint` so that a subprocess can be made to

* exit abruptly (``os._exit(70)``, no cleanup) at the step named by ``$DPADAPT_TEST_CRASH_AT``
  (``after_reserve``, ``after_publish``, ``after_write``), or right after the temporary release
  file is complete and fsynced (``tmp_written``: a complete, valid copy is on disk), or
* hold the ledger's write lock for ``$DPADAPT_TEST_HOLD_RESERVE_S`` seconds inside ``reserve``, or
* pause (for a test to send SIGINT) at the step named by ``$DPADAPT_TEST_PAUSE_AT`` — a checkpoint, or
  ``import`` (while the CLI is still loading its commands, before any budget is touched) — after
  creating the file ``$DPADAPT_TEST_PAUSE_FILE``.
"""

from __future__ import annotations

import os
import time

from dpadapt.privacy import ledger


def _pause(name: str) -> None:
    if os.environ.get("DPADAPT_TEST_PAUSE_AT") == name:
        with open(os.environ["DPADAPT_TEST_PAUSE_FILE"], "w") as fh:
            fh.write(name)
        time.sleep(60)


def _checkpoint(name: str) -> None:
    _pause(name)
    if name == "reserve_locked":
        hold = float(os.environ.get("DPADAPT_TEST_HOLD_RESERVE_S", "0") or 0)
        if hold > 0:
            time.sleep(hold)
    if os.environ.get("DPADAPT_TEST_CRASH_AT") == name:
        os._exit(70)


ledger.checkpoint = _checkpoint
_pause("import")

if os.environ.get("DPADAPT_TEST_CRASH_AT") == "tmp_written":
    _fsync = os.fsync

    def _fsync_then_die(fd: int) -> None:
        _fsync(fd)
        os._exit(70)

    os.fsync = _fsync_then_die
