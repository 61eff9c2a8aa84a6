"""The sound default as two separate processes (issue 28): the receiver's request, the source's release, the receiver's
adaptation — each design through the CLI, each party in its own folder with its own ledger."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpadapt.io import save_table
from dpadapt.privacy.ledger import Ledger, fingerprint
from dpadapt.release import Release

SRC = Path(__file__).resolve().parents[1] / "src"


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(SRC), DPADAPT_LEDGER=str(cwd / "ledger.sqlite"))
    return subprocess.run([sys.executable, "-m", "dpadapt.cli.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _rows(design: str, rng):
    """Labelled source and target rows whose target takes ``design`` (tight clusters: prototypes; a blob: discriminant)."""
    ys, yt = np.arange(300) % 3, np.arange(200) % 3
    if design in ("prototypes", "selection"):
        centers = 6.0 * np.eye(3, 12)
        return centers[ys] + 0.4 * rng.normal(size=(300, 12)), ys, centers[yt] + 0.3 + 0.4 * rng.normal(size=(200, 12)), yt
    Xs, Xt = rng.normal(size=(300, 12)), rng.normal(size=(200, 12))
    Xs[:, 0] += 4.0 * ys
    Xt[:, 0] += 4.0 * yt
    return Xs, ys, Xt, yt


@pytest.mark.parametrize("design, epsilon", [("prototypes", "1"), ("prototypes", "8"), ("discriminant", "1"),
                                             ("discriminant", "8"), ("selection", "1")])
def test_every_design_runs_as_two_processes(tmp_path, rng, design, epsilon):
    source, target = tmp_path / "source", tmp_path / "target"
    source.mkdir()
    target.mkdir()
    Xs, ys, Xt, yt = _rows(design, rng)
    save_table(source / "data.npz", Xs, ys)
    save_table(target / "data.npz", Xt, yt)
    private = ["--epsilon", epsilon, "--delta", "1e-5"]
    done = _cli(["request", "--data", "data.npz", "--classes", "0,1,2", "--n-source", "300", *private,
                 *(["--design", design] if design == "selection" else []), "--out", "request.release"], target)
    assert done.returncode == 0, done.stderr
    assert design in done.stdout
    (source / "request.release").write_bytes((target / "request.release").read_bytes())  # sent to the source
    Ledger(source / "ledger.sqlite").set_budget("source", fingerprint(source / "data.npz"), 10.0, 1e-5)
    done = _cli(["release", "sound", "--request", "request.release", "--data", "data.npz", "--classes", "0,1,2",
                 "--out", "stats.release", *private], source)
    assert done.returncode == 0, done.stderr
    rel = Release.load(source / "stats.release")
    assert set(rel.arrays) == {"prototypes": {"sums", "counts"}, "selection": {"candidate_counts"}}.get(
        design, {"sums", "counts", "second"})
    (target / "stats.release").write_bytes((source / "stats.release").read_bytes())  # sent back
    done = _cli(["adapt", "sound", "--release", "stats.release", "--own-release", "request.release", "--data", "data.npz",
                 "--out", "model.dpadapt"], target)
    assert done.returncode == 0, done.stderr
    done = _cli(["score", "--model", "model.dpadapt", "--data", "data.npz"], target)
    assert done.returncode == 0, done.stderr
    first = next(line for line in done.stdout.splitlines() if line.strip().startswith("accuracy"))  # the model's own rule
    assert float(first.split()[1]) > 0.6, done.stdout
