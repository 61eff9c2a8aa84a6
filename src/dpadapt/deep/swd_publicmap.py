"""The source's public map as a file: message 1 of the two-party DP-SWD marginals protocol.

The protocol itself (what each message is, the one release's theorem) is in
:mod:`dpadapt.deep.swd_marginals`; the command line in :mod:`dpadapt.cli.methods.dpswd_marginals`.
This module turns the source's side of message 1 into a :class:`~dpadapt.release.Release` and back.

What crosses (source → target): a Release ``method="dpswd"``, ``kind="public_map"``,
``owner="source"`` whose guarantee is a *disclosure* (ε = ∞, not a DP claim:
:func:`dpadapt.privacy.families.dpswd.public_map_disclosure` — the source is public in DP-SWD;
nothing is charged to a budget). It carries

* arrays ``g.<name>``: the source-only extractor g (for network ``"mlp"`` its first layer is the
  source's standardisation, mean and scale of the source's own rows), ``h.<name>``: the head h;
* ``center``, ``directions``, ``edges``: the public centre, scaled directions and bin edges;
* ``classes``: the public label set;
* params ``architecture`` (``"dpswd-net"``), ``network`` (its JSON parameters), ``k``, ``bins``,
  ``map_digest`` (:meth:`~dpadapt.deep.swd_marginals.PublicSlices.digest`).

A received map is untrusted input: :func:`load_map` builds the network only from the registered
architecture, checks every parameter's name, shape and finiteness, the public arrays' shapes and
the digest, and raises a one-line :class:`~dpadapt.release.ReleaseError` otherwise. No code and no
pickle are read from the file.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch
from torch import nn

from dpadapt import modelio
from dpadapt.deep.swd_da import MARGINAL_WIDTH, SWDDAConfig, networks, train_swd_da
from dpadapt.deep.swd_marginals import PublicSlices, public_slices
from dpadapt.privacy.families.dpswd import public_map_disclosure
from dpadapt.release import Release, ReleaseError

KIND = "public_map"
ARCHITECTURE = "dpswd-net"
NETWORKS = ("mlp", "digits")
#: bounds on the sizes a received map may declare (the network is allocated before its weights are read)
MAX_FEATURES, MAX_CLASSES = 100_000, 10_000


class Standardize(nn.Module):
    """(x − mean) / scale with the source's public statistics as buffers (saved with the weights)."""

    def __init__(self, n_features: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("scale", torch.ones(n_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.scale


class SWDNetwork(nn.Module):
    """h(g(x)) on raw rows; for network ``"mlp"`` g begins with the source's standardisation."""

    def __init__(self, network: str, n_features: int, n_classes: int):
        super().__init__()
        g, h = networks(network, n_features, n_classes)
        self.g = nn.Sequential(Standardize(n_features), g) if network == "mlp" else g
        self.h = h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.h(self.g(x))


def _network_params(network: Any, n_features: Any, n_classes: Any) -> dict[str, Any]:
    """Checked JSON parameters of the architecture (they may come from a foreign file)."""
    if network not in NETWORKS:
        raise ValueError(f"network must be one of {NETWORKS}, got {network!r}")
    for name, value, high in (("n_features", n_features, MAX_FEATURES), ("n_classes", n_classes, MAX_CLASSES)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise ValueError(f"{name} must be an integer in [1, {high}], got {value!r}")
    return {"network": network, "n_features": n_features, "n_classes": n_classes}


def build_network(network: str, n_features: int, n_classes: int) -> SWDNetwork:
    """The architecture ``"dpswd-net"`` (untrained; registered in :mod:`dpadapt.modelio`)."""
    return SWDNetwork(**_network_params(network, n_features, n_classes))


@dataclasses.dataclass(frozen=True)
class PublicMap:
    """What the source discloses: the frozen map (g, c, U, bins), its head h, the label set, the network's parameters."""

    slices: PublicSlices
    h: nn.Module
    classes: np.ndarray
    network: dict[str, Any]

    @property
    def n_features(self) -> int:
        return int(self.network["n_features"])

    def classifier(self, h: nn.Module | None = None) -> modelio.TorchClassifier:
        """The predictor g → h (or g → ``h``, e.g. the adapted head) on raw rows, saveable with :mod:`dpadapt.modelio`."""
        net = build_network(**self.network)
        net.g.load_state_dict(self.slices.g.state_dict())
        net.h.load_state_dict((self.h if h is None else h).state_dict())
        return modelio.TorchClassifier(net, self.classes, self.n_features, ARCHITECTURE, dict(self.network))


def source_public_map(
    Xs: np.ndarray, y_idx: np.ndarray, classes: np.ndarray, *, network: str, steps: int, batch_size: int, lr: float,
    k: int, bins: int, rng: np.random.Generator,
) -> PublicMap:
    """The source's step: source-only training of g, h on its own rows, then :func:`public_slices`.

    As in :meth:`dpadapt.deep.swd_da.DPSWDAdapter._fit_marginals` (same networks, Adam loop and
    public draws from ``rng``); only the batch cap differs: ``min(batch_size, n_s)``, since the
    source does not know the target's size.
    """
    Xs = np.asarray(Xs, dtype=np.float32)
    torch.manual_seed(int(rng.integers(2**31)))  # weight init and dropout: public randomness
    net = build_network(network, int(Xs.shape[1]), len(classes))
    if network == "mlp":  # the source's own (public) statistics
        net.g[0].mean.copy_(torch.as_tensor(Xs.mean(axis=0)))
        net.g[0].scale.copy_(torch.as_tensor(Xs.std(axis=0) + 1e-6))
    run = SWDDAConfig(mode="source-only", steps=int(steps), batch_size=min(int(batch_size), Xs.shape[0]), lr=float(lr), k=int(k))
    pre = train_swd_da(Xs, y_idx, None, net.g, net.h, run, rng)
    slices = public_slices(pre.g, Xs, k=int(k), bins=int(bins), width=MARGINAL_WIDTH, rng=rng)
    return PublicMap(slices, pre.h.eval(), np.asarray(classes), _network_params(network, int(Xs.shape[1]), len(classes)))


def map_release(pm: PublicMap) -> Release:
    """Message 1 as a Release (a disclosure: ε = ∞, nothing charged)."""
    arrays = {f"g.{name}": t.detach().cpu().numpy().copy() for name, t in pm.slices.g.state_dict().items()}
    arrays |= {f"h.{name}": t.detach().cpu().numpy().copy() for name, t in pm.h.state_dict().items()}
    arrays |= {"center": pm.slices.center, "directions": pm.slices.directions, "edges": pm.slices.edges,
               "classes": pm.classes}
    guarantee = public_map_disclosure()
    return Release(
        method="dpswd", kind=KIND, owner="source", arrays=arrays, guarantee=guarantee,
        params={"architecture": ARCHITECTURE, "network": dict(pm.network), "k": pm.slices.k, "bins": pm.slices.bins,
                "map_digest": pm.slices.digest(), "disclosure": guarantee.reasons[0]},
    )


def _load_state(module: nn.Module, arrays: dict[str, np.ndarray], prefix: str) -> None:
    expected = module.state_dict()
    given = {name[len(prefix):]: a for name, a in arrays.items() if name.startswith(prefix)}
    if set(given) != set(expected):
        raise ReleaseError(f"the map's {prefix[:-1]} parameters do not fit the declared network")
    for name, t in expected.items():
        a = given[name]
        if tuple(a.shape) != tuple(t.shape) or a.dtype.kind != "f" or not np.isfinite(a).all():
            raise ReleaseError(f"the map's parameter {prefix}{name} must be finite floats of shape {tuple(t.shape)}")
    module.load_state_dict({name: torch.as_tensor(np.asarray(a, dtype=np.float32)) for name, a in given.items()})


def load_map(release: Release, n_features: int | None = None) -> PublicMap:
    """Check a received public map (see the module docstring) and rebuild it; ``n_features``: the receiver's width."""
    if release.method != "dpswd" or release.kind != KIND or release.owner != "source":
        raise ReleaseError(f"expected the source's dpswd {KIND} release, got {release.owner} {release.method}/{release.kind}")
    p = release.params
    if p.get("architecture") != ARCHITECTURE or not isinstance(p.get("network"), dict):
        raise ReleaseError(f"the map's network architecture {p.get('architecture')!r} is not known to this installation")
    try:
        params = _network_params(**{key: p["network"].get(key) for key in ("network", "n_features", "n_classes")})
    except ValueError as exc:
        raise ReleaseError(f"the map's network parameters are invalid: {exc}") from None
    if n_features is not None and params["n_features"] != int(n_features):
        raise ReleaseError(f"the map is for data with {params['n_features']} features; these data have {n_features}")
    missing = [name for name in ("center", "directions", "edges", "classes") if name not in release.arrays]
    if missing:
        raise ReleaseError(f"the map lacks the array(s) {', '.join(missing)}")
    classes = release["classes"]
    if classes.ndim != 1 or classes.size != params["n_classes"] or np.unique(classes).size != classes.size:
        raise ReleaseError(f"the map's classes must be {params['n_classes']} distinct labels")
    try:
        net = build_network(**params)
    except ValueError as exc:
        raise ReleaseError(f"the map's network cannot be built: {exc}") from None
    _load_state(net.g, release.arrays, "g.")
    _load_state(net.h, release.arrays, "h.")
    net.eval()
    with torch.no_grad():
        d = int(net.g(torch.zeros(1, params["n_features"])).shape[1])
    k, bins = p.get("k"), p.get("bins")
    if any(isinstance(v, bool) or not isinstance(v, int) or v < lo for v, lo in ((k, 1), (bins, 2))):
        raise ReleaseError(f"the map's k and bins must be integers ≥ 1 and ≥ 2, got {k!r}, {bins!r}")
    shapes = {"center": (d,), "directions": (d, k), "edges": (bins + 1,)}
    for name, shape in shapes.items():
        a = release[name]
        if tuple(a.shape) != shape or a.dtype.kind != "f" or not np.isfinite(a).all():
            raise ReleaseError(f"the map's {name} must be finite floats of shape {shape}, got {a.dtype} {tuple(a.shape)}")
    if not np.all(np.diff(release["edges"]) > 0):
        raise ReleaseError("the map's bin edges must increase")
    for q in net.g.parameters():  # g is frozen (as public_slices leaves it); h stays trainable for adaptation
        q.requires_grad_(False)
    slices = PublicSlices(net.g, release["center"], release["directions"], release["edges"])
    if slices.digest() != p.get("map_digest"):
        raise ReleaseError("the map's arrays do not match its digest")
    return PublicMap(slices, net.h, classes, params)


def steps_for(n_source: int, batch_size: int, epochs: int, min_steps: int) -> int:
    """The a-priori source-only length (as the estimator: ``epochs`` passes, at least ``min_steps``)."""
    from dpadapt.configs.deep import training_steps

    return training_steps(epochs, min_steps, math.ceil(n_source / min(int(batch_size), int(n_source))))
