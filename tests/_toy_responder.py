"""Test-only private party of a toy iterative protocol (run as a separate process).

The querier sends a point q; the private party answers the mean of its rows' displacements
clip(x − q, C), plus Gaussian noise. Under replace-one (n public) one record moves the mean by at
most 2C/n (ℓ2), so σ = z · 2C/n and each round is the Gaussian event with noise multiplier z
(RDP, Mironov 2017); rounds compose in the ledger. Iterating q ← q + answer converges to
(a neighbourhood of) the private mean.

Usage: python _toy_responder.py --dir DIR --data X.npy --ledger DB --z Z --clip C --delta D
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.ledger import Ledger, fingerprint
from dpadapt.privacy.mechanisms import clip_rows
from dpadapt.protocol import FileChannel, Message, PlannedAnswer, serve


def planner(X: np.ndarray, z: float, clip: float, delta: float, rng: np.random.Generator):
    n = X.shape[0]
    sensitivity = 2.0 * clip / n
    guarantee = Guarantee.from_event(
        accounting.gaussian_event(z), party="source", unit="record", relation="replace_one", delta=delta,
        theorem="Gaussian mechanism, RDP (Mironov 2017)", sensitivity=sensitivity,
    )

    def plan(query: Message) -> PlannedAnswer:
        q = np.asarray(query["q"], dtype=np.float64)

        def execute() -> Message:
            mean = clip_rows(X - q, clip).mean(axis=0)
            return Message("answer", {"step": mean + rng.normal(scale=z * sensitivity, size=mean.shape)}, guarantee=guarantee)

        return PlannedAnswer(guarantee, execute)

    return plan


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--ledger", required=True)
    p.add_argument("--z", type=float, default=2.0)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    args = p.parse_args(argv)
    X = np.load(args.data)
    ledger = Ledger(args.ledger)
    plan = planner(X, args.z, args.clip, args.delta, np.random.default_rng(0))
    channel = FileChannel(args.dir, "source", "target", session="toy")
    with channel:
        rounds = serve(channel, plan, ledger=ledger, party="source", dataset_id=fingerprint(args.data), method="toy-mean", timeout=30)
    print(f"answered {len(rounds)} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
