"""``dpadapt account``: ε of DP-SGD-style training, or σ for a target ε.

Compose `steps` subsampled Gaussian releases with dp-accounting and print ε by RDP and PLD. Poisson
sampling (add/remove) by default; --without-replacement N B for fixed-size batches of B out of N
(replace-one, RDP only). With --epsilon, print the noise multiplier σ instead.
"""

from __future__ import annotations

import argparse
import json
import math

from dpadapt.cli.main import add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    p, _ = add_command(sub, "account", __doc__.split("\n\n")[1])
    p.add_argument("--sigma", type=float, help="noise multiplier σ (noise std / sensitivity)")
    p.add_argument("--sample-rate", type=float, default=1.0, help="Poisson sampling rate q (default 1: no sampling)")
    p.add_argument("--without-replacement", nargs=2, type=int, metavar=("N", "B"), help="fixed-size batches of B out of N instead of Poisson")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--epsilon", type=float, help="calibrate σ for this ε instead of computing ε")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _maker(args):
    from dpadapt.privacy import accounting  # here, not at import: `dpadapt account --help` stays fast

    if args.without_replacement:
        n, b = args.without_replacement
        return "replace_one", lambda z: accounting.sampled_without_replacement_gaussian_event(z, n, b, args.steps)
    if not 0.0 < args.sample_rate <= 1.0:
        raise ValueError(f"--sample-rate must be in (0, 1], got {args.sample_rate}")
    if args.sample_rate == 1.0:
        return "add_remove", lambda z: accounting.gaussian_event(z, args.steps)
    return "add_remove", lambda z: accounting.poisson_gaussian_event(z, args.sample_rate, args.steps)


#: Below this noise multiplier PLD accounting is skipped: its discretisation grows without bound
#: (minutes and gigabytes) while RDP stays cheap; the RDP value is printed alone.
PLD_MIN_SIGMA = 0.5


def run(args) -> int:
    import numpy as np

    with np.errstate(divide="ignore", over="ignore"):  # a tiny σ gives ε = ∞ without a warning
        return _run(args)


def _run(args) -> int:
    from dpadapt.privacy import accounting

    relation, make = _maker(args)
    if args.steps < 1:
        raise ValueError("--steps must be ≥ 1")
    if args.epsilon is not None:
        out = {"epsilon": args.epsilon, "delta": args.delta, "relation": relation}
        out["sigma_rdp"] = accounting.calibrate_noise_multiplier(make, args.epsilon, args.delta, relation, "rdp")
        if out["sigma_rdp"] < PLD_MIN_SIGMA:
            out["note"] = f"PLD skipped: σ < {PLD_MIN_SIGMA} (the RDP σ above is valid)"
        elif accounting.resolve_method(make(1.0), relation, "auto") == "pld":
            out["sigma_pld"] = accounting.calibrate_noise_multiplier(make, args.epsilon, args.delta, relation, "pld")
    else:
        if args.sigma is None:
            raise ValueError("give --sigma (to compute ε) or --epsilon (to calibrate σ)")
        if not (args.sigma > 0 and math.isfinite(args.sigma)):
            raise ValueError(f"--sigma must be a finite number > 0, got {args.sigma}")
        event = make(args.sigma)
        out = {"sigma": args.sigma, "delta": args.delta, "relation": relation, "steps": args.steps}
        out["epsilon_rdp"] = accounting.epsilon(event, args.delta, relation, "rdp")
        if args.sigma < PLD_MIN_SIGMA:
            out["note"] = f"PLD skipped: σ < {PLD_MIN_SIGMA} (the RDP ε above is valid)"
        elif accounting.resolve_method(event, relation, "auto") == "pld":
            out["epsilon_pld"] = accounting.epsilon(event, args.delta, relation, "pld")
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for key, value in out.items():
            print(f"{key:<12} {value:.4g}" if isinstance(value, float) else f"{key:<12} {value}")
    return 0
