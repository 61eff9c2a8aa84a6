"""Kill loop over ``dpadapt release`` (issue 19, item 5): SIGKILL at random moments, then check the ledger.

Each round starts ``dpadapt release dpot`` (the sound release of class sums and counts for a request, noise drawn by
:mod:`dpadapt.privacy.mechanisms`) on a fresh output name and kills it with SIGKILL at a random
moment: half of the rounds anywhere in the run (uniform over the duration of a complete run), half
in its privacy-relevant tail (uniform over the time between the reservation appearing in the
ledger and the end of a complete run). After each kill it snapshots every file that is a complete,
verifiable release (the output or a ``.tmp-PID`` copy, as a sync client would see them), then
opens the ledger (which settles the dead process's reservation) and checks the rule:

    no usable release exists whose spend was refunded (state ``aborted``).

Usage: ``python benchmarks/ledger/ledger_kill_loop.py --kills 30 [--seed 0] [--workdir DIR]``; prints one
line per round and a summary, exits 1 on a violation. ``tests/test_ledger_kill_loop.py`` runs 8 rounds.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dpadapt.io import save_table
from dpadapt.privacy.ledger import Ledger, fingerprint
from dpadapt.release import Release, ReleaseError


def _command(workdir: Path, out: str) -> list[str]:
    return [sys.executable, "-m", "dpadapt.cli.main", "release", "dpot", "--data", str(workdir / "source.npz"),
            "--request", str(workdir / "request.release"), "--epsilon", "1", "--delta", "1e-6", "--n-classes", "3",
            "--out", str(workdir / out)]


def _reserved(ledger: Path) -> bool:
    try:
        with sqlite3.connect(f"{ledger.resolve().as_uri()}?mode=ro", uri=True, timeout=0.05) as con:
            return con.execute("SELECT 1 FROM spends WHERE state = 'reserved'").fetchone() is not None
    except sqlite3.Error:
        return False


def _usable_releases(workdir: Path, out: str) -> dict[str, str]:
    """release id → file name, for every complete and verifiable release file of this round."""
    found = {}
    for path in workdir.glob(out + "*"):
        try:
            found[Release.load(path).release_id] = path.name
        except (ReleaseError, OSError, ValueError):
            pass
    return found


def setup(workdir: Path) -> dict[str, str]:
    """A labelled source file, the receiver's request for it and a ledger with a budget large enough for every round."""
    from dpadapt import sound

    rng = np.random.default_rng(0)
    save_table(workdir / "source.npz", rng.normal(size=(300, 20)), np.arange(300) % 3)
    config = sound.Config(epsilon=1.0, delta=1e-6, classes=(0, 1, 2), design="prototypes")
    sound.request(rng.normal(size=(200, 20)), config, 300).save(workdir / "request.release")
    ledger = workdir / "ledger.sqlite"
    Ledger(ledger).set_budget("source", fingerprint(workdir / "source.npz"), 1e4, 1e-3)
    return dict(os.environ, DPADAPT_LEDGER=str(ledger))


def kill_loop(workdir: Path, kills: int, seed: int = 0, log=print) -> list[dict]:
    """Run the loop; return one record per round (``violation`` True when the rule is broken)."""
    env = setup(workdir)
    ledger = workdir / "ledger.sqlite"
    t0 = time.perf_counter()  # one complete run: the duration to draw kill moments from
    done = subprocess.run(_command(workdir, "full.release"), env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the reference run failed: {done.stderr.strip()}")
    full = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    rounds = []
    for i in range(kills):
        out = f"k{i}.release"
        proc = subprocess.Popen(_command(workdir, out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        start = time.perf_counter()
        if i % 2 == 0:
            time.sleep(rng.uniform(0.0, full))
            where = "anywhere"
        else:
            while proc.poll() is None and not _reserved(ledger) and time.perf_counter() - start < 2 * full:
                time.sleep(0.002)
            time.sleep(rng.uniform(0.0, max(full - (time.perf_counter() - start), 0.05)))
            where = "tail"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        at = time.perf_counter() - start
        usable = _usable_releases(workdir, out)  # before the ledger settles anything
        states = {e.release_id: e.state for e in Ledger(ledger).history()}
        violation = any(states.get(rid) != "committed" for rid in usable)
        record = {"round": i, "where": where, "killed_at_s": round(at, 3), "exit": proc.returncode,
                  "usable_files": sorted(usable.values()),
                  "states": sorted(states[rid] for rid in usable) if usable else [],
                  "violation": violation}
        rounds.append(record)
        log(record)
    entries = Ledger(ledger).history()
    log({"complete_run_s": round(full, 3), "kills": kills,
         "committed": sum(e.state == "committed" for e in entries) - 1, "aborted": sum(e.state == "aborted" for e in entries),
         "violations": sum(r["violation"] for r in rounds)})
    return rounds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workdir", default=None, help="folder for the data, ledger and releases (default: a temporary one)")
    args = p.parse_args(argv)
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        rounds = kill_loop(Path(args.workdir), args.kills, args.seed)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            rounds = kill_loop(Path(tmp), args.kills, args.seed)
    return 1 if any(r["violation"] for r in rounds) else 0


if __name__ == "__main__":
    sys.exit(main())
