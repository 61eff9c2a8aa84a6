"""DP-SGD training of one classifier per feature subspace (PRIMA phase 3), on dpadapt's DP-SGD engine.

Privacy statement. Every source record is in every subspace, so the m subspace models are *not*
protected by "parallel composition" (spec 04, soundness note 4). Two sound options:

* ``joint=True`` (default): the m heads form one module; per example the gradients of all heads
  are concatenated and clipped *together* to ``max_grad_norm`` (Opacus flat clipping), one
  Gaussian noise vector is added per step. One Poisson-subsampled Gaussian event per step.
  Per-example clipped sums: :func:`dpadapt.deep.dpsgd.per_example_clipped_sum` (tested against
  Opacus as an oracle); the Poisson sample and the noise: :mod:`dpadapt.privacy.mechanisms`.
* ``joint=False``: m separate DP-SGD runs; their m events are composed (RDP sum).

Sampling is Poisson with rate q = 1/⌈n/B⌉ (as Opacus' Poisson loader), matching
:func:`dpadapt.privacy.accounting.poisson_gaussian_event` (Abadi et al. 2016), accounted under
replace-one with n public (:func:`dpadapt.privacy.families.prima.dpsgd_heads_plan`). The clipping bound is fixed a priori, except in paper mode
(``clip_rule="median"``: each run's median per-example gradient norm of the private data — flagged).
Noise is Abadi's form g̃ = (Σ clipped g + N(0, σ²c²I)) / B.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from dpadapt.deep.dpsgd import per_example_clipped_sum
from dpadapt.privacy import accounting
from dpadapt.privacy.mechanisms import NoiseSource, poisson_subsample, torch_gaussian_noise
from dpadapt.validation import check_finite_in

HEAD_TYPES = ("logreg", "mlp")
CLIP_RULES = ("fixed", "median")
#: δ at which ``TrainedHeads.opacus_epsilons`` reports ε (the name is kept for compatibility; the
#: value is dp-accounting's add/remove RDP ε of the run, which Opacus' accountant reproduces — a
#: comparison figure, not the Guarantee, which is replace-one).
OPACUS_CHECK_DELTA = 1e-5


def dpsgd_schedule(n: int, batch_size: int, epochs: int) -> tuple[float, int]:
    """(sample rate q, number of steps) of Opacus' Poisson DataLoader for n rows, batch B, E epochs."""
    if n < 1 or batch_size < 1 or epochs < 1:
        raise ValueError("n, batch_size and epochs must be ≥ 1")
    per_epoch = math.ceil(n / batch_size)
    return 1.0 / per_epoch, per_epoch * epochs


def _make_head(p: int, n_classes: int, head: str, hidden: Sequence[int]) -> nn.Module:
    if head == "logreg":
        layer = nn.Linear(p, n_classes)
        nn.init.zeros_(layer.weight)
        nn.init.zeros_(layer.bias)
        return layer
    if head == "mlp":
        dims = [p, *hidden, n_classes]
        layers: list[nn.Module] = []
        for i in range(len(dims) - 1):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            if i < len(dims) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)
    raise ValueError(f"head must be one of {HEAD_TYPES}, got {head!r}")


class SubspaceHeads(nn.Module):
    """m heads; head i reads columns offsets[i]:offsets[i+1] of the input. Output (B, m, C)."""

    def __init__(self, sizes: Sequence[int], n_classes: int, head: str = "logreg", hidden: Sequence[int] = (256, 128)):
        super().__init__()
        self.sizes = [int(s) for s in sizes]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).tolist()
        self.heads = nn.ModuleList(_make_head(p, n_classes, head, hidden) for p in self.sizes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = [h(x[:, a:b]) for h, a, b in zip(self.heads, self.offsets[:-1], self.offsets[1:])]
        return torch.stack(outs, dim=1)


def _loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of the sum over heads of the cross-entropy."""
    b, m, c = logits.shape
    return nn.functional.cross_entropy(logits.reshape(b * m, c), y.repeat_interleave(m)) * m


def export_params(module: SubspaceHeads) -> list[list[np.ndarray]]:
    """Per head, its Linear layers' [W₁, b₁, W₂, b₂, ...] as numpy arrays."""
    out = []
    for h in module.heads:
        arrays = []
        for layer in h.modules():
            if isinstance(layer, nn.Linear):
                arrays += [layer.weight.detach().cpu().numpy().astype(np.float64), layer.bias.detach().cpu().numpy().astype(np.float64)]
        out.append(arrays)
    return out


def head_scores(params: Sequence[np.ndarray], Z: np.ndarray) -> np.ndarray:
    """Logits of one exported head (Linear layers with ReLU in between) on rows Z."""
    h = np.asarray(Z, dtype=np.float64)
    n_layers = len(params) // 2
    for i in range(n_layers):
        h = h @ params[2 * i].T + params[2 * i + 1]
        if i < n_layers - 1:
            h = np.maximum(h, 0.0)
    return h


@dataclasses.dataclass
class TrainedHeads:
    """Exported weights and the privacy record of their training."""

    params: list[list[np.ndarray]]
    events: list  # dp_accounting events, one per DP-SGD run (empty when non-private)
    noise_multiplier: float | None
    max_grad_norm: float | None
    sample_rate: float
    steps: int
    opacus_epsilons: list[float]
    clip_norms: list[float] | None = None  # per head (None when non-private)

    def event(self):
        return accounting.compose(self.events)


def median_gradient_norm(Z: np.ndarray, y: np.ndarray, sizes: Sequence[int], n_classes: int, head: str, hidden, seed: int) -> float:
    """Median per-example gradient norm at initialisation (paper mode's data-dependent clipping bound)."""
    torch.manual_seed(seed)
    model = SubspaceHeads(sizes, n_classes, head, hidden)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_one(p, x, t):
        logits = torch.func.functional_call(model, p, (x[None],))
        return _loss(logits, t[None])

    grads = torch.func.vmap(torch.func.grad(loss_one), in_dims=(None, 0, 0))(
        params, torch.as_tensor(Z, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long)
    )
    sq = sum(g.reshape(g.shape[0], -1).pow(2).sum(1) for g in grads.values())
    return float(sq.sqrt().median())


def train_heads(
    Z: np.ndarray,
    y: np.ndarray,
    sizes: Sequence[int],
    n_classes: int,
    *,
    head: str = "logreg",
    hidden: Sequence[int] = (256, 128),
    epochs: int = 30,
    batch_size: int = 25,
    lr: float = 0.5,
    momentum: float = 0.0,
    max_grad_norm: float = 1.0,
    noise_multiplier: float | None = 1.0,
    joint: bool = True,
    seed: int = 0,
    noise: NoiseSource | None = None,
    clip_rule: str = "fixed",
) -> TrainedHeads:
    """Train the m subspace heads on rows ``Z`` (blocks concatenated in ``sizes`` order).

    ``noise_multiplier=None`` trains without privacy (plain minibatch SGD, no clipping).
    ``joint`` selects one DP-SGD run over all heads (one clip of the concatenated per-example
    gradient) or m separate runs (events composed by the caller through :meth:`TrainedHeads.event`).
    ``seed`` fixes the public randomness (initialisation, non-private shuffles); the Poisson samples
    and the noise come from ``noise`` (fresh entropy when not given). ``clip_rule="median"`` (paper
    mode only, NOT private) replaces ``max_grad_norm`` by each run's own median per-example gradient
    norm at initialisation; :attr:`TrainedHeads.clip_norms` records the bound of every head.
    """
    if clip_rule not in CLIP_RULES:
        raise ValueError(f"clip_rule must be one of {CLIP_RULES}, got {clip_rule!r}")
    noise = NoiseSource() if noise is None else noise
    check_finite_in(Z, np.float32, "the aligned features")
    Z = np.asarray(Z, dtype=np.float32)
    y = np.asarray(y, dtype=np.int64)
    n = Z.shape[0]
    if Z.shape[1] != sum(sizes):
        raise ValueError(f"Z has {Z.shape[1]} columns, the blocks have {sum(sizes)}")
    q, steps = dpsgd_schedule(n, batch_size, epochs)
    if joint or noise_multiplier is None:
        groups = [list(range(len(sizes)))]
    else:
        groups = [[i] for i in range(len(sizes))]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    params: list[list[np.ndarray]] = [None] * len(sizes)  # type: ignore[list-item]
    clips: list[float] = [float(max_grad_norm)] * len(sizes)
    events, opacus_eps = [], []
    for g, members in enumerate(groups):
        cols = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in members])
        group_sizes = [sizes[i] for i in members]
        clip = float(max_grad_norm)
        if clip_rule == "median" and noise_multiplier is not None:  # this run's own heads, as the paper
            clip = median_gradient_norm(Z[:, cols], y, group_sizes, n_classes, head, hidden, seed * 1000 + g)
        module, ev, eps = _train_one(
            Z[:, cols], y, group_sizes, n_classes, head, hidden, epochs, batch_size, lr,
            momentum, clip, noise_multiplier, seed * 1000 + g, noise,
        )
        for i, p in zip(members, export_params(module)):
            params[i] = p
            clips[i] = clip
        if ev is not None:
            events.append(ev)
            opacus_eps.append(eps)
    return TrainedHeads(params, events, noise_multiplier, None if noise_multiplier is None else max_grad_norm, q, steps,
                        opacus_eps, clip_norms=None if noise_multiplier is None else clips)


def train_one_vs_rest_heads(Z: np.ndarray, y: np.ndarray, sizes: Sequence[int], n_classes: int, **options) -> TrainedHeads:
    """One binary logistic-regression head per class and subspace (PRIMA Sec. 5.2: "one binary model per class").

    For each class c, :func:`train_heads` fits two-logit heads on the labels ``y == c`` (``options``
    as there; ``head`` must be "logreg"); class c's score in subspace i is the binary logit difference
    (w₁ − w₀)·z + (b₁ − b₀), stacked into one q-way linear head per subspace, so the vote reads the
    arg max over the one-vs-rest scores. The events of all q·m runs are returned (composed by the caller).
    """
    if options.get("head", "logreg") != "logreg":
        raise ValueError("one-vs-rest heads are binary logistic regressions: head must be 'logreg'")
    per_class = [train_heads(Z, (np.asarray(y) == c).astype(np.int64), sizes, 2, **options) for c in range(n_classes)]
    params = []
    for i in range(len(sizes)):
        W = np.stack([t.params[i][0][1] - t.params[i][0][0] for t in per_class])
        b = np.array([t.params[i][1][1] - t.params[i][1][0] for t in per_class])
        params.append([W, b])
    first = per_class[0]
    clips = None if first.clip_norms is None else [c for t in per_class for c in t.clip_norms]
    return TrainedHeads(params, [e for t in per_class for e in t.events], first.noise_multiplier, first.max_grad_norm,
                        first.sample_rate, first.steps, [e for t in per_class for e in t.opacus_epsilons], clip_norms=clips)


def _train_one(Z, y, sizes, n_classes, head, hidden, epochs, batch_size, lr, momentum, max_grad_norm, noise_multiplier,
               seed, noise):
    torch.manual_seed(seed)
    model = SubspaceHeads(sizes, n_classes, head, hidden)
    Zt, yt = torch.as_tensor(Z), torch.as_tensor(y)
    n = Zt.shape[0]
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    q, steps = dpsgd_schedule(n, batch_size, epochs)
    model.train()
    if noise_multiplier is None:  # plain minibatch SGD (public shuffles)
        gen = torch.Generator().manual_seed(seed)
        for _ in range(epochs):
            order = torch.randperm(n, generator=gen)
            for start in range(0, n, batch_size):
                rows = order[start : start + batch_size]
                optimizer.zero_grad()
                _loss(model(Zt[rows]), yt[rows]).backward()
                optimizer.step()
        return model, None, None
    noise_gen = noise.torch_generator()
    expected = q * n  # Abadi's normalisation by the expected batch size
    std = float(noise_multiplier) * float(max_grad_norm)
    named = dict(model.named_parameters())
    for _ in range(steps):
        rows = torch.as_tensor(poisson_subsample(n, q, noise))
        sums, _ = per_example_clipped_sum(model, _loss, Zt[rows], yt[rows], float(max_grad_norm))
        for name, total in sums.items():  # an empty Poisson batch still gets its noise
            named[name].grad = torch_gaussian_noise(total, std, noise_gen) / expected
        optimizer.step()
    event = accounting.poisson_gaussian_event(float(noise_multiplier), q, steps)
    return model, event, accounting.epsilon(event, OPACUS_CHECK_DELTA)
