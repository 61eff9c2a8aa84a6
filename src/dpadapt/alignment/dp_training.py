"""DP-SGD training of one classifier per feature subspace (PRIMA phase 3), with Opacus.

Privacy statement. Every source record is in every subspace, so the m subspace models are *not*
protected by "parallel composition" (spec 04, soundness note 4). Two sound options:

* ``joint=True`` (default): the m heads form one module; per example the gradients of all heads
  are concatenated and clipped *together* to ``max_grad_norm`` (Opacus flat clipping), one
  Gaussian noise vector is added per step. One Poisson-subsampled Gaussian event per step.
* ``joint=False``: m separate DP-SGD runs; their m events are composed (RDP sum).

Sampling is Poisson with rate q = 1/⌈n/B⌉ (Opacus ``poisson_sampling=True``), matching
:func:`dpadapt.privacy.accounting.poisson_gaussian_event` (add/remove relation; Abadi et al.
2016; Mironov, Talwar, Zhang 2019). The clipping bound is fixed a priori, except in paper mode
(``clip_rule="median"``: the median per-example gradient norm of the private data — flagged).
Noise is Abadi's form g̃ = (Σ clipped g + N(0, σ²c²I)) / B.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from dpadapt.privacy import accounting

HEAD_TYPES = ("logreg", "mlp")
#: δ at which Opacus' own accountant is queried, to cross-check our dp-accounting ε.
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
) -> TrainedHeads:
    """Train the m subspace heads on rows ``Z`` (blocks concatenated in ``sizes`` order).

    ``noise_multiplier=None`` trains without privacy (plain minibatch SGD, no clipping).
    ``joint`` selects one DP-SGD run over all heads (one clip of the concatenated per-example
    gradient) or m separate runs (events composed by the caller through :meth:`TrainedHeads.event`).
    """
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
    events, opacus_eps = [], []
    for g, members in enumerate(groups):
        cols = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in members])
        module, ev, eps = _train_one(
            Z[:, cols], y, [sizes[i] for i in members], n_classes, head, hidden, epochs, batch_size, lr,
            momentum, max_grad_norm, noise_multiplier, seed * 1000 + g,
        )
        for i, p in zip(members, export_params(module)):
            params[i] = p
        if ev is not None:
            events.append(ev)
            opacus_eps.append(eps)
    return TrainedHeads(params, events, noise_multiplier, None if noise_multiplier is None else max_grad_norm, q, steps, opacus_eps)


def _train_one(Z, y, sizes, n_classes, head, hidden, epochs, batch_size, lr, momentum, max_grad_norm, noise_multiplier, seed):
    torch.manual_seed(seed)
    model = SubspaceHeads(sizes, n_classes, head, hidden)
    data = torch.utils.data.TensorDataset(torch.as_tensor(Z), torch.as_tensor(y))
    gen = torch.Generator().manual_seed(seed)
    loader = torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=noise_multiplier is None, generator=gen)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    engine = None
    if noise_multiplier is not None:
        from opacus import PrivacyEngine

        engine = PrivacyEngine(accountant="rdp")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, optimizer, loader = engine.make_private(
                module=model,
                optimizer=optimizer,
                data_loader=loader,
                noise_multiplier=noise_multiplier,
                max_grad_norm=max_grad_norm,
                poisson_sampling=True,
                noise_generator=torch.Generator().manual_seed(seed + 1),
            )
    model.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus' full-backward-hook notice on input layers
        for _ in range(epochs):
            for xb, yb in loader:
                optimizer.zero_grad()
                if xb.shape[0] == 0:
                    optimizer.step()  # Opacus still adds noise for an empty Poisson batch
                    continue
                _loss(model(xb), yb).backward()
                optimizer.step()
    if engine is None:
        return model, None, None
    history = engine.accountant.history
    z, q, steps = history[0][0], history[0][1], sum(h[2] for h in history)
    if len({(h[0], h[1]) for h in history}) != 1:
        raise RuntimeError("unexpected Opacus accountant history (several noise levels)")
    event = accounting.poisson_gaussian_event(z, q, steps)
    previous = logging.getLogger().level
    logging.disable(logging.WARNING)  # Opacus logs non-converging RDP orders at warning level
    try:
        opacus_eps = float(engine.accountant.get_epsilon(delta=OPACUS_CHECK_DELTA))
    finally:
        logging.disable(logging.NOTSET)
        logging.getLogger().setLevel(previous)
    inner = model._module if hasattr(model, "_module") else model
    return inner, event, opacus_eps
