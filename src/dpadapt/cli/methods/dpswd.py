"""``dpadapt release dpswd`` (target) and ``dpadapt adapt dpswd`` (other party): one-shot DP-SWD.

One-shot distance release
-------------------------
The target (private) party clips its rows to the public norm R, projects them on k public
random unit directions U (drawn from ``--seed``) and releases ``P_t = clip(X_t) U + V``,
V ~ N(0, σ²), σ = z·2R‖U‖op with z from the analytic Gaussian mechanism — (ε, δ)-DP for one
target record under replace-one (see :mod:`dpadapt.transport.swd`). The Guarantee depends
only on (n, ε, δ) and is computed before any noise is drawn. Release file:
``method="dpswd"``, ``kind="target_projections"``, arrays ``projections`` (n × k, rows in random
order) and ``directions`` (d × k), params ``sigma``, ``clip_norm``, ``k``, ``d``, ``n``,
``sensitivity``. The other party computes DP-SWD between its own rows (clipped to R, projected,
smoothed with the same σ) and ``P_t`` — post-processing.

Iterative DA protocol (Algorithm 2, sound mode; library functions in :mod:`dpadapt.deep.swd_da`)
------------------------------------------------------------------------------------------------
Before round 1 both parties agree on (ε, δ, n_t, B, T, k, R) and the target computes
:func:`dpadapt.transport.swd.plan_releases` (noise multiplier z, Guarantee of the T releases).
Round t (or a block of rounds sharing the same g):

1. source → target: g's parameters (``torch`` ``state_dict``) and U_t (d_feat × k), or the seed
   that generates them;
2. target → source: :func:`dpadapt.deep.swd_da.release_target_rounds` — a Release
   ``(method="dpswd", kind="target_rounds")`` with ``projections`` (R × B × k) =
   ``clip(g(x_t)) U_t + N(0, σ_t²)`` on B rows sampled without replacement per round,
   ``directions`` (R × d_feat × k), ``sigmas`` (R,), and the Guarantee of those R releases;
3. source: one Adam step of g, h on CE(source) + λ·DP-SWD(clip(g(x_s))U_t + V_s, P_t) with P_t a
   constant (stop-gradient) — post-processing of the releases.

The target answers at most T rounds (its planned budget); the whole run's Guarantee is
``plan.guarantee``.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from dpadapt.cli.config_options import add_option
from dpadapt.cli.methods import AdaptOutcome, PlannedRelease, register_module

if TYPE_CHECKING:
    from dpadapt.io import Table
    from dpadapt.release import Release


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--epsilon", type=float, required=True, help="target budget ε of the release")
    add_option(parser, "--delta", type=float, default=1e-5, help="δ")
    add_option(parser, "--seed", type=int, default=None, help="seed of the public randomness (directions U); the noise is always fresh OS entropy")
    add_option(parser, "--k", type=int, default=200, help="number of random directions")
    add_option(parser, "--clip-norm", type=float, default=1.0, help="public row-norm bound R (rows are clipped to it)")


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    """Guarantee from (n, d, ε, δ, k, R) before any noise; ``execute`` draws U and the noise."""
    from dpadapt.transport import swd
    from dpadapt.validation import check_features, check_random_state

    X = check_features(table.X, "target data")
    plan = swd.plan_projection_release(X.shape[0], X.shape[1], epsilon=args.epsilon, delta=args.delta, k=args.k,
                                       clip_norm=args.clip_norm)
    rng = check_random_state(args.seed)
    return PlannedRelease(plan.guarantee, lambda: swd.release_projections(X, epsilon=args.epsilon, delta=args.delta,
                                                                          plan=plan, random_state=rng))


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--seed", type=int, default=None, help="seed of this party's smoothing noise")
    add_option(parser, "--q", type=int, default=2, help="order q of the sliced Wasserstein distance")
    add_option(parser, "--no-smooth", action="store_true", help="do not add N(0, σ²) to this party's projections")


@dataclasses.dataclass(frozen=True)
class DistanceResult:
    """What ``adapt dpswd`` computes: the DP-SWD value and the release it came from."""

    dpswd: float
    q: int
    release_id: str


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    """DP-SWD between this party's rows and one released set of target projections."""
    from dpadapt.transport import swd

    mine = [r for r in releases if r.method == "dpswd" and r.kind == "target_projections"]
    if len(mine) != 1:
        raise ValueError(f"adapt dpswd needs exactly one dpswd target_projections release, got {len(mine)}")
    release = mine[0]
    value = swd.distance_from_release(release, table.X, q=args.q, smooth=not args.no_smooth, random_state=args.seed)
    return AdaptOutcome(model=DistanceResult(value, args.q, release.release_id),
                        guarantees={"target": release.guarantee}, metrics={"dpswd": value})


COMMANDS = register_module(
    __name__,
    "DP sliced Wasserstein distance (Rakotomamonjy & Ralaivola 2021): noisy target projections, one-shot",
)
