"""DP-SWD domain adaptation from ONE release of the target's sliced marginals (``design="marginals"``).

The aggregate counterpart of the per-step protocol of :mod:`dpadapt.deep.swd_da` (DESIGN.md,
"Aggregates first"). The source is public in DP-SWD; only the target is protected.

Protocol
--------
1. **Source → target** (public, no budget): the source trains g, h on its own labelled rows
   (source-only) and sends :class:`PublicSlices` — the frozen extractor g, a public centre c (the
   mean of g on the source), k directions ``U`` (random unit directions, each column divided by
   the std of the source's projections on it) and fixed bin edges. Everything in it is a function
   of the source's data and of public randomness.
2. **Target → source** (the only release): the k × b histogram of the projections
   ``(g(x_t) − c) U`` of its n rows in the fixed bins (values outside the range fall in the end
   bins), plus N(0, σ²) on every count, σ = z·sqrt(2k). A record moves one count in each of the k
   directions, so the ℓ2 sensitivity under replace-one is sqrt(2k) whatever g, U, n are; z is
   the analytic Gaussian multiplier of (ε, δ)
   (:func:`dpadapt.privacy.families.dpswd.plan_sliced_marginals`, mechanism
   :func:`dpadapt.privacy.mechanisms.sliced_histogram_release`). One release, (ε, δ)-DP for one
   target record.
3. **Source** (post-processing, any number of steps): a map T on the feature space (identity at
   the start) moves the source's features so that their sliced marginals match the released
   ones (per direction: sorted projections of a source batch against the released marginal's
   quantiles at the same levels — 1-D W2), while the head h is fine-tuned on the mapped source
   features with the source labels. T carries the source onto the target's feature
   distribution, so the target applies **g → h** to its own rows (its features already follow the
   released marginals; the map is the identity on the target side).

Across two processes (:mod:`dpadapt.cli.methods.dpswd_marginals`): message 1 is the file written
by ``dpadapt slices`` (:mod:`dpadapt.deep.swd_publicmap`: a Release ``dpswd``/``public_map``, a
disclosure with ε = ∞), message 2 the file of ``dpadapt release dpswd-marginals`` (this module's
:func:`release_marginals`, charged to the target's ledger), and the source's ``dpadapt adapt
dpswd-marginals`` writes the model g → adapted h that the target uses with ``dpadapt predict``.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import time

import numpy as np
import torch
from torch import nn

from dpadapt.privacy.families.dpswd import plan_sliced_marginals
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import NoiseSource, sliced_histogram, sliced_histogram_release
from dpadapt.release import Release, ReleaseError
from dpadapt.transport import swd

KIND = "sliced_marginals"
MAPS = ("mlp", "affine")


# --- the public feature map the source sends ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PublicSlices:
    """Frozen extractor g, public centre c (d,), scaled directions U (d × k), bin edges (b + 1,)."""

    g: nn.Module
    center: np.ndarray
    directions: np.ndarray
    edges: np.ndarray

    @property
    def k(self) -> int:
        return int(self.directions.shape[1])

    @property
    def bins(self) -> int:
        return int(self.edges.size - 1)

    def digest(self) -> str:
        """SHA-256 of g's parameters and the public arrays: binds a release to this exact map."""
        h = hashlib.sha256()
        for name, t in sorted(self.g.state_dict().items()):
            h.update(name.encode())
            h.update(t.detach().cpu().numpy().tobytes())
        for a in (self.center, self.directions, self.edges):
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        return h.hexdigest()

    def features(self, X, chunk: int = 2048) -> np.ndarray:
        """g(X) in eval mode (no dropout), float64 — a per-row public map."""
        X = X if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(X, dtype=np.float32))
        was = self.g.training
        self.g.eval()
        with torch.no_grad():
            F = torch.cat([self.g(X[s : s + chunk]) for s in range(0, X.shape[0], chunk)]) if len(X) else None
        self.g.train(was)
        return np.zeros((0, self.center.size)) if F is None else F.double().numpy()


def public_slices(g: nn.Module, Xs, *, k: int, bins: int, width: float, rng: np.random.Generator) -> PublicSlices:
    """The source's public map: c = mean of g on the source, U = unit directions / source std, bins on [−w, w]."""
    g = copy.deepcopy(g).eval()
    for p in g.parameters():
        p.requires_grad_(False)
    tmp = PublicSlices(g, np.zeros(1), np.zeros((1, 1)), np.zeros(2))
    Fs = tmp.features(Xs)
    center = Fs.mean(axis=0)
    U = swd.directions(Fs.shape[1], int(k), rng)
    scale = ((Fs - center) @ U).std(axis=0) + 1e-6
    return PublicSlices(g, center, U / scale, np.linspace(-width, width, int(bins) + 1))


# --- plan and release (target) -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MarginalsPlan:
    """σ of the one release and its Guarantee (None: non-private, exact counts); made before any row is read."""

    n: int
    k: int
    bins: int
    sigma: float
    guarantee: Guarantee | None


def plan_marginals(epsilon: float | None, delta: float, *, n: int, k: int, bins: int) -> MarginalsPlan:
    """Plan ONE release of k sliced histograms of n rows (ε = None: exact histograms, no guarantee)."""
    if epsilon is None:
        return MarginalsPlan(int(n), int(k), int(bins), 0.0, None)
    sigma, guarantee = plan_sliced_marginals(epsilon, delta, n=n, k=k, bins=bins)
    return MarginalsPlan(int(n), int(k), int(bins), float(sigma), guarantee)


def release_marginals(plan: MarginalsPlan, slices: PublicSlices, Xt, noise: NoiseSource | None = None) -> Release:
    """Target: the noisy k × b histogram of ``(g(x_t) − c) U`` (plus the public map's facts)."""
    if (slices.k, slices.bins) != (plan.k, plan.bins):
        raise ValueError(f"the plan is for k={plan.k}, bins={plan.bins}; the map has k={slices.k}, bins={slices.bins}")
    if len(Xt) != plan.n:
        raise ValueError(f"the plan was made for {plan.n} target rows, got {len(Xt)}")
    Z = slices.features(Xt) - slices.center
    if plan.guarantee is None:
        counts = sliced_histogram(Z, slices.directions, slices.edges)
        guarantee = Guarantee.non_private("target", "epsilon=None: exact sliced histograms")
    else:
        counts = sliced_histogram_release(Z, slices.directions, slices.edges, sigma=plan.sigma,
                                          noise=noise if noise is not None else NoiseSource()).value
        guarantee = plan.guarantee
    return Release(
        method="dpswd", kind=KIND, owner="target",
        arrays={"counts": counts, "center": slices.center, "directions": slices.directions, "edges": slices.edges},
        guarantee=guarantee,
        params={"k": plan.k, "bins": plan.bins, "sigma": plan.sigma, "n": plan.n, "map_digest": slices.digest()},
    )


# --- adaptation (source, post-processing) --------------------------------------------------------


def check_release(release: Release, slices: PublicSlices) -> None:
    """Refuse a release that is not a sliced-marginals release of THIS public map (ReleaseError)."""
    if release.method != "dpswd" or release.kind != KIND:
        raise ReleaseError(f"expected a dpswd {KIND} release, got {release.method}/{release.kind}")
    if release.params.get("map_digest") != slices.digest():
        raise ReleaseError("the release was computed with another feature map (extractor, centre, directions or bins)")
    for name, mine in (("center", slices.center), ("directions", slices.directions), ("edges", slices.edges)):
        if release[name].shape != mine.shape or not np.array_equal(release[name], mine):
            raise ReleaseError(f"the release's {name} differ from the public map's")
    if release["counts"].shape != (slices.k, slices.bins):
        raise ReleaseError(f"counts must be {slices.k} × {slices.bins}, got {release['counts'].shape}")


def marginal_quantiles(counts: np.ndarray, edges: np.ndarray, levels: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Quantiles (k × L) of released histograms (k × b); per-class counts (K × k × b) give K × k × L.

    Post-processing: counts ≤ ``floor`` are read as empty (negative noisy counts always are). With a
    positive floor (one noise std) the bins that are empty but came out positive by noise do not
    spread spurious mass into the tails.
    """
    if counts.ndim == 3:
        flat = marginal_quantiles(counts.reshape(-1, counts.shape[-1]), edges, levels, floor)
        return flat.reshape(*counts.shape[:2], -1)
    c = np.where(counts > max(floor, 0.0), counts, 0.0)
    cdf = np.cumsum(c, axis=1)
    cdf = np.hstack([np.zeros((c.shape[0], 1)), cdf / np.maximum(cdf[:, -1:], 1e-12)])
    return np.stack([np.interp(levels, row, edges) for row in cdf])


class FeatureMap(nn.Module):
    """T(f) = f + r(f), r zero at the start: an affine map or a one-hidden-layer MLP (ReLU)."""

    def __init__(self, d: int, form: str = "mlp", hidden: int = 256):
        super().__init__()
        if form not in MAPS:
            raise ValueError(f"map form must be one of {MAPS}, got {form!r}")
        last = nn.Linear(d if form == "affine" else hidden, d)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.residual = last if form == "affine" else nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), last)

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        return f + self.residual(f)


@dataclasses.dataclass
class AdaptConfig:
    """Source-side adaptation (post-processing): steps, batch, Adam lr, weight of the marginal term, map form."""

    steps: int = 1000
    batch_size: int = 256
    lr: float = 1e-3
    weight: float = 1.0
    form: str = "mlp"


@dataclasses.dataclass
class Adapted:
    """The adapted head (apply as h(g(x)) to target rows), the fitted source map T, and the loss trace."""

    h: nn.Module
    T: FeatureMap
    losses: list[float]
    seconds: float


def adapt_marginals(
    release: Release, slices: PublicSlices, Xs, ys: np.ndarray, h: nn.Module, cfg: AdaptConfig,
    rng: np.random.Generator,
) -> Adapted:
    """Fit T and fine-tune a copy of h: CE(h(T(g(x_s))), y_s) + weight · Σ_j W2²(sliced marginal j).

    Only the release (checked against ``slices``), the public map and the source's own rows are
    read: the result is post-processing of the release (no further privacy cost).
    """
    check_release(release, slices)
    Fs = torch.as_tensor(slices.features(Xs), dtype=torch.float32)
    ys_t = torch.as_tensor(ys, dtype=torch.long)
    n, B = Fs.shape[0], min(int(cfg.batch_size), Fs.shape[0])
    levels = (np.arange(B) + 0.5) / B
    floor = float(release.params.get("sigma", 0.0))
    Q = torch.as_tensor(marginal_quantiles(release["counts"], release["edges"], levels, floor).T, dtype=torch.float32)
    c = torch.as_tensor(slices.center, dtype=torch.float32)
    U = torch.as_tensor(slices.directions, dtype=torch.float32)
    torch.manual_seed(int(rng.integers(2**31)))  # map init / dropout: public randomness
    T, h = FeatureMap(Fs.shape[1], cfg.form), copy.deepcopy(h)
    opt = torch.optim.Adam(list(T.parameters()) + list(h.parameters()), lr=cfg.lr)
    ce = nn.CrossEntropyLoss()
    losses: list[float] = []
    t0 = time.perf_counter()
    T.train(), h.train()
    for _ in range(int(cfg.steps)):
        rows = torch.as_tensor(rng.choice(n, size=B, replace=False))
        mapped = T(Fs[rows])
        P = torch.sort((mapped - c) @ U, dim=0).values
        match = ((P - Q) ** 2).mean()
        loss = ce(h(mapped.detach()), ys_t[rows]) + cfg.weight * match  # T is fitted by the marginals only
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(match.detach()))
    T.eval(), h.eval()
    return Adapted(h, T, losses, time.perf_counter() - t0)
