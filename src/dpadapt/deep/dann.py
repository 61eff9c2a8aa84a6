"""Domain-adversarial neural network (DANN; Ganin & Lempitsky, ICML 2015; Ganin et al., JMLR 2016).

Non-private reference for DPDA/G-DPDA (:mod:`dpadapt.deep.dpda`) and a baseline for the other
deep methods. The network has three parts — feature extractor G_f, label head G_y, domain head
G_d — and a gradient-reversal layer between G_f and G_d whose weight ν ramps from 0 to 1 as
ν_p = 2/(1 + exp(−10p)) − 1 with p the training progress.

Training is the two-phase SGD of Wang et al. (TIFS 2020, Algorithm 1), written as one step per
iteration over *streams*: each stream Poisson-samples rows of one domain (rate M/N) and
contributes the gradients of its *blocks* — ``"label"`` (cross-entropy of G_y on source labels,
learning rate ``lr``) and ``"domain"`` (cross-entropy of G_d on the domain label, 0 = source,
1 = target, reversed into G_f; learning rate ``lr_domain``). Sums are divided by the expected
batch size M. DPDA replaces some streams by private ones (:mod:`dpadapt.deep.dpsgd`).

Inputs may be dense arrays or scipy CSR matrices (bag-of-words); each batch is densified.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from dpadapt.api import ConfigEstimator
from dpadapt.base import binary_scores
from dpadapt.configs.deep import DANNConfig, training_steps
from dpadapt.deep.dpsgd import PrivacySpec, clipped_block_sums
from dpadapt.deep.runtime import training_device
from dpadapt.privacy.mechanisms import NoiseSource, poisson_subsample, random_streams, torch_gaussian_noise
from dpadapt.validation import check_finite_in, check_fitted_features

ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}


class GradientReversal(torch.autograd.Function):
    """Identity forward; multiplies the incoming gradient by −ν backward (Ganin & Lempitsky 2015)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, coeff: float) -> torch.Tensor:
        ctx.coeff = coeff
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        return -ctx.coeff * grad_output, None


def grl_schedule(progress: float, gamma: float = 10.0) -> float:
    """DANN's adaptation weight ν_p = 2/(1 + exp(−γp)) − 1 for progress p ∈ [0, 1] (0 → 1)."""
    p = min(max(float(progress), 0.0), 1.0)
    return 2.0 / (1.0 + math.exp(-gamma * p)) - 1.0


class DANNNetwork(nn.Module):
    """Feature extractor, label head and domain head (the domain head outputs 2 logits)."""

    def __init__(self, feature_extractor: nn.Module, label_head: nn.Module, domain_head: nn.Module):
        super().__init__()
        self.feature_extractor = feature_extractor
        self.label_head = label_head
        self.domain_head = domain_head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class logits."""
        return self.label_head(self.feature_extractor(x))

    def domain_logits(self, x: torch.Tensor, coeff: float = 1.0) -> torch.Tensor:
        """Domain logits with the gradient reversal (weight ``coeff``) between G_f and G_d."""
        return self.domain_head(GradientReversal.apply(self.feature_extractor(x), coeff))


def mlp_network(n_features: int, n_classes: int, hidden: Sequence[int] = (50,), activation: str = "relu") -> DANNNetwork:
    """The Amazon network of Wang et al. (TIFS 2020, §V-B2): input → hidden → {classes, 2} (Linear layers only)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    hidden = tuple(int(h) for h in hidden)
    if not hidden or min(hidden) < 1:
        raise ValueError(f"hidden must list ≥ 1 positive layer widths, got {hidden}")
    layers: list[nn.Module] = []
    width = n_features
    for h in hidden:
        layers += [nn.Linear(width, h), ACTIVATIONS[activation]()]
        width = h
    return DANNNetwork(nn.Sequential(*layers), nn.Linear(width, n_classes), nn.Linear(width, 2))


# --- streams and the training loop ---------------------------------------------------------------


@dataclasses.dataclass
class Stream:
    """One Poisson-sampled batch per step from one domain, contributing the gradients of ``blocks``.

    ``privacy`` is ``None`` for a public stream (plain autograd) or the clipping/noise spec of a
    DP-SGD stream.
    """

    name: str
    party: str
    X: np.ndarray | sp.csr_matrix
    y: np.ndarray | None
    domain: int
    blocks: tuple[str, ...]
    rate: float
    privacy: PrivacySpec | None = None

    @property
    def expected_batch(self) -> float:
        return self.rate * self.X.shape[0]


def to_tensor(X, rows: np.ndarray | None = None) -> torch.Tensor:
    """Dense float32 tensor of ``X[rows]`` (CSR rows are densified)."""
    sub = X if rows is None else X[rows]
    if sp.issparse(sub):
        sub = sub.toarray()
    return torch.from_numpy(np.ascontiguousarray(sub, dtype=np.float32))


def public_block_gradients(net: DANNNetwork, x, y, domain: int, blocks: Sequence[str], nu: float, expected_batch: float):
    """Un-noised gradients ``{block: {parameter: Σ gradient / M}}`` of a public batch."""
    out: dict[str, dict[nn.Parameter, torch.Tensor]] = {b: {} for b in blocks}
    if x.shape[0] == 0:
        return out
    h = net.feature_extractor(x)
    for i, b in enumerate(blocks):
        if b == "label":
            loss = nn.functional.cross_entropy(net.label_head(h), y, reduction="sum")
        else:
            d = torch.full((x.shape[0],), domain, dtype=torch.long, device=x.device)
            loss = nn.functional.cross_entropy(net.domain_head(GradientReversal.apply(h, nu)), d, reduction="sum")
        params = [p for p in net.parameters() if p.requires_grad]
        grads = torch.autograd.grad(loss, params, retain_graph=i < len(blocks) - 1, allow_unused=True)
        out[b] = {p: g / expected_batch for p, g in zip(params, grads) if g is not None}
    return out


@dataclasses.dataclass
class TrainLog:
    """What a training run did: steps and timing (never the private streams' realised batch sizes)."""

    steps: int
    seconds: float
    steps_per_epoch: int

    @property
    def seconds_per_epoch(self) -> float:
        return self.seconds * self.steps_per_epoch / max(self.steps, 1)


def public_poisson_sample(n: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Poisson sample of a *public* stream's rows from the public generator (no privacy role)."""
    if not 0 < rate <= 1:
        raise ValueError(f"sampling rate must be in (0, 1], got {rate}")
    return np.flatnonzero(rng.random(n) < rate)


def train_streams(
    net: DANNNetwork,
    streams: Sequence[Stream],
    steps: int,
    steps_per_epoch: int,
    lr: float,
    lr_domain: float,
    rng: np.random.Generator,
    noise: NoiseSource | torch.Generator,
    per_example: str = "auto",
    device: torch.device | str = "cpu",
) -> TrainLog:
    """Run ``steps`` SGD iterations; every stream samples, computes its (noisy) gradients, one update.

    Public streams sample from the public ``rng``; private streams sample (Poisson) and draw their
    noise from the secret ``noise`` through :mod:`dpadapt.privacy.mechanisms`.
    The update θ ← θ − lr·g_label − lr_domain·g_domain of the summed stream gradients is
    post-processing of the released noisy sums. A parameter reached by several private blocks
    (θ_f in G-DPDA: source label, source domain and target domain coordinates) receives
    Σ_k a_k·N_k with independent N_k ~ N(0, σ_k²C_k²I) and a_k = lr_k/M_k; that sum is drawn as
    one Gaussian with variance Σ_k a_k²σ_k²C_k² — the same distribution, so the released model
    is distributed exactly as under separate draws, at a fraction of the sampling cost.
    ``device``: where the batches go (the network must already be there); the noise is drawn on the CPU.
    """
    lrs = {"label": lr, "domain": lr_domain}
    noise_gen = noise.torch_generator() if isinstance(noise, NoiseSource) else noise
    sampler = noise if isinstance(noise, NoiseSource) else None
    tensors = {s.name: None if s.y is None else torch.from_numpy(np.asarray(s.y, dtype=np.int64)).to(device)
               for s in streams}
    for s in streams:  # whole datasets, in the dtype of the computation, before any sample or noise
        check_finite_in(s.X, np.float32, f"the {s.name} rows")
    dense = {s.name: s.X if sp.issparse(s.X) else torch.from_numpy(np.ascontiguousarray(s.X, dtype=np.float32)).to(device)
             for s in streams}
    net.train()
    start = time.perf_counter()
    for t in range(steps):
        nu = grl_schedule(t / max(steps, 1))
        updates: dict[nn.Parameter, torch.Tensor] = {}
        noise_var: dict[nn.Parameter, float] = {}
        for s in streams:
            if s.privacy is None:
                rows = public_poisson_sample(s.X.shape[0], s.rate, rng)
            else:
                if sampler is None:
                    raise ValueError("private streams need a NoiseSource (their sample is secret)")
                rows = poisson_subsample(s.X.shape[0], s.rate, sampler)
            X, idx = dense[s.name], torch.from_numpy(rows).to(device)
            x = to_tensor(X, rows).to(device) if sp.issparse(X) else X[idx]
            y = None if tensors[s.name] is None else tensors[s.name][idx]
            if s.privacy is None:
                grads = public_block_gradients(net, x, y, s.domain, s.blocks, nu, s.expected_batch)
            else:
                grads, _, _ = clipped_block_sums(net, x, y, s.domain, s.blocks, nu, s.privacy, per_example)
                grads = {b: {p: g / s.expected_batch for p, g in gs.items()} for b, gs in grads.items()}
                std = s.privacy.noise_multiplier * s.privacy.clip / s.expected_batch
                for b, gs in grads.items():
                    for p in gs:
                        noise_var[p] = noise_var.get(p, 0.0) + (lrs[b] * std) ** 2
            for b, gs in grads.items():
                for p, g in gs.items():
                    updates[p] = updates.get(p, 0) + lrs[b] * g
        with torch.no_grad():
            for p, u in updates.items():
                p.sub_(torch_gaussian_noise(u, math.sqrt(noise_var.get(p, 0.0)), noise_gen))
    return TrainLog(steps, time.perf_counter() - start, steps_per_epoch)


# --- the estimator --------------------------------------------------------------------------------


class DANN(ConfigEstimator):
    """Non-private DANN (or, with ``adapt=False``, the source-only network "NN" of the paper).

    Hyper-parameters: :class:`~dpadapt.configs.deep.DANNConfig` (``hidden``, ``activation``,
    ``network``, ``epochs``, ``min_steps``, ``batch_size``, ``lr``, ``lr_domain``, ``adapt``,
    ``random_state``). The label set is the source's (public) labels unless ``classes`` is given.

    Attributes
    ----------
    network_ : DANNNetwork
    n_steps_ : int
    train_log_ : TrainLog
    guarantees_ : dict (empty: no privacy)
    """

    config_class = DANNConfig

    # -- shared machinery (used by DPDA / G-DPDA) -----------------------------------------------

    def _prepare(self, Xs, ys, Xt, yt=None, *, labels_private: bool = False):
        Xs, ys, Xt, _ = self._check_domains(Xs, ys, Xt, yt, allow_sparse=True)
        cfg = self.make_config()
        self.config_ = cfg
        if labels_private or cfg.classes is not None:
            classes = np.asarray(cfg.required_classes())
            unknown = ~np.isin(ys, classes)
            if unknown.any():
                raise ValueError("a source label lies outside the public label set classes=")
            self.classes_ = classes
            order = np.argsort(classes)
            ys = order[np.searchsorted(classes[order], ys)]
        else:
            self.classes_, ys = np.unique(ys, return_inverse=True)  # the source labels are public here
        rng, noise = random_streams(cfg.random_state, reproducible_noise=cfg.reproducible_noise)
        with torch.random.fork_rng():
            torch.manual_seed(int(rng.integers(2**62)))
            if cfg.network is None:
                net = mlp_network(Xs.shape[1], len(self.classes_), cfg.hidden, cfg.activation)
            else:
                net = cfg.network(Xs.shape[1], len(self.classes_))
                if not isinstance(net, DANNNetwork):
                    raise TypeError("network(n_features, n_classes) must return a DANNNetwork")
        self.n_features_in_ = Xs.shape[1]
        return Xs, ys.astype(np.int64), Xt, net, rng, noise

    def _rate(self, n: int) -> float:
        if self.batch_size > n:
            raise ValueError(f"batch_size {self.batch_size} exceeds the {n} rows of a domain")
        return self.batch_size / n

    def _steps_per_epoch(self, n_source: int, n_target: int) -> int:
        return math.ceil(max(n_source, n_target) / self.batch_size)

    def _total_steps(self, n_source: int, n_target: int) -> int:
        return training_steps(self.epochs, self.min_steps, self._steps_per_epoch(n_source, n_target))

    def _train(self, net, streams, steps, steps_per_epoch, rng, noise, per_example="auto"):
        self.network_ = net
        self.n_steps_ = int(steps)
        device = training_device(self.device)
        net.to(device)
        self.train_log_ = train_streams(
            net, streams, steps, steps_per_epoch, self.lr, self.lr_domain, rng, noise, per_example, device
        )
        net.eval().cpu()  # trained wherever, used on the CPU (prediction, releases, saved models)
        return self

    def fit_domains(self, Xs, ys, Xt, yt=None):
        """Fit on labelled source ``(Xs, ys)`` and unlabelled target ``Xt`` (``yt`` is ignored)."""
        Xs, ys, Xt, net, rng, noise = self._prepare(Xs, ys, Xt, yt)
        streams = [Stream("source", "source", Xs, ys, 0, ("label", "domain") if self.adapt else ("label",), self._rate(Xs.shape[0]))]
        if self.adapt:
            streams.append(Stream("target", "target", Xt, None, 1, ("domain",), self._rate(Xt.shape[0])))
        spe = self._steps_per_epoch(Xs.shape[0], Xt.shape[0])
        self._train(net, streams, self._total_steps(Xs.shape[0], Xt.shape[0]), spe, rng, noise)
        self._set_guarantees()
        return self

    # -- prediction --------------------------------------------------------------------------

    def decision_function(self, X) -> np.ndarray:
        """Class logits of the label head (the training source's prior): (n, K); for two classes (scikit-learn's shape)
        the 1-D ``z₁ − z₀``, > 0 exactly where ``predict`` picks ``classes_[1]``."""
        return binary_scores(self._logits(X))

    def _logits(self, X) -> np.ndarray:
        """The label head's logits (n, K), whatever K."""
        X = check_fitted_features(self, X, "network_", allow_sparse=True)
        out = []
        with torch.no_grad():
            for start in range(0, X.shape[0], 2048):
                out.append(self.network_(to_tensor(X[start : start + 2048])).numpy())
        return np.concatenate(out) if out else np.zeros((0, len(self.classes_)))

    def predict_proba(self, X) -> np.ndarray:
        logits = torch.from_numpy(self._logits(X))
        return torch.softmax(logits, dim=1).numpy()

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self._logits(X), axis=1)]
