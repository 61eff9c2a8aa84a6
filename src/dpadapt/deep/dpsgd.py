"""DP-SGD for DANN streams: per-example gradients, clipping and one Gaussian draw per step.

A *private stream* is one Poisson-subsampled batch of one party's rows per step. For every
sampled row it computes the gradients of one or more *blocks* (``"label"``: the label loss
through the feature extractor and the label head; ``"domain"``: the domain loss through the
feature extractor and the domain head, with the feature-extractor part multiplied by −ν as the
gradient-reversal layer does), clips them and adds Gaussian noise once.

Privacy (sound mode, ``grouping="joint"``)
    Every coordinate of every block that the row's loss reaches is one concatenated per-example
    vector, clipped to ℓ2 norm ``C``; the batch sum is released with one draw of
    N(0, σ²C²I). One record contributes a vector of norm ≤ ``C`` to that sum (replacing it moves
    the sum by ≤ 2C when it is sampled), so one step is the Poisson-subsampled Gaussian mechanism
    with noise multiplier σ and rate q (Abadi et al., CCS 2016) — one
    :func:`~dpadapt.privacy.accounting.poisson_gaussian_event` per step, accounted under
    replace-one with n public (:mod:`dpadapt.privacy.families.dpda`).

Paper mode (``grouping="per_group"``)
    The published procedure (Wang et al., TIFS 2020, Eqs. 14–15) clips each parameter group
    (feature extractor / domain head / label head, per block) separately to ``C`` and draws
    noise N(0, σ²C²I) for each. With G groups the joint sensitivity is √G·C, so the step is
    a Gaussian mechanism with multiplier σ/√G — what :func:`~dpadapt.privacy.families.dpda.stream_noise_multiplier` returns
    and what must be charged (spec 05 §7 note 2).

Per-example gradients are computed in one of two ways:

* ``"ghost"`` — for networks whose trainable parameters all sit in :class:`torch.nn.Linear`
  layers fed 2-D inputs: for a linear layer the per-example weight gradient is the outer
  product δᵢaᵢᵀ, so its squared norm is ‖δᵢ‖²‖aᵢ‖² and the clipped sum is (w ⊙ δ)ᵀA. No
  per-example gradient is ever materialised ("ghost clipping", Goodfellow 2015; Li et al.
  2022), which matters for the 5000 × 50 first layer on Amazon bag-of-words.
* ``"vmap"`` — any per-example network: ``torch.func.vmap(torch.func.grad(...))``.

No cross-example operation may sit on a private path: :func:`check_per_example_modules`
rejects BatchNorm (its batch statistics mix rows and its running averages leak).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from dpadapt.privacy.families.dpda import BLOCK_PARTS, PrivacySpec
from dpadapt.privacy.mechanisms import torch_noise_generator as torch_noise
from dpadapt.privacy.mechanisms import NonFiniteError, torch_gaussian_noise

PerExampleMethod = Literal["auto", "ghost", "vmap"]
Block = Literal["label", "domain"]

PARTS = ("feature", "label", "domain")


class CrossExampleModuleError(ValueError):
    """A module that mixes examples (e.g. BatchNorm) sits on a differentially private path."""


def check_per_example_modules(module: nn.Module, where: str) -> None:
    """Raise :class:`CrossExampleModuleError` if ``module`` contains BatchNorm (or a norm with running stats).

    DP-SGD's per-example sensitivity argument needs every example's output to depend on that
    example alone; BatchNorm normalises with batch statistics and stores running averages of
    private data in buffers that are released with the model.
    """
    for name, sub in module.named_modules():
        bad = isinstance(sub, nn.modules.batchnorm._BatchNorm) or (
            isinstance(sub, nn.modules.instancenorm._InstanceNorm) and sub.track_running_stats
        )
        if bad:
            raise CrossExampleModuleError(
                f"{where} contains {type(sub).__name__} at '{name or '<root>'}': batch normalisation mixes "
                "examples and stores running statistics of private data, which breaks DP-SGD's per-example "
                "sensitivity. Replace it with LayerNorm/GroupNorm or freeze it (requires_grad=False and eval mode "
                "is not enough: remove it from the private path)."
            )


# --- the network parts -------------------------------------------------------------------------


def _parts(net: nn.Module) -> dict[str, nn.Module]:
    return {"feature": net.feature_extractor, "label": net.label_head, "domain": net.domain_head}


def trainable(net: nn.Module, part: str) -> list[tuple[str, nn.Parameter]]:
    """Named trainable parameters of one part of a DANN network."""
    return [(n, p) for n, p in _parts(net)[part].named_parameters() if p.requires_grad]


def _block_losses(net: nn.Module, x: torch.Tensor, y: torch.Tensor | None, domain: int, blocks: Sequence[str]):
    """Per-block summed losses of a batch (no gradient reversal: −ν is applied by the caller)."""
    h = net.feature_extractor(x)
    out = {}
    if "label" in blocks:
        out["label"] = nn.functional.cross_entropy(net.label_head(h), y, reduction="sum")
    if "domain" in blocks:
        d = torch.full((x.shape[0],), domain, dtype=torch.long, device=x.device)
        out["domain"] = nn.functional.cross_entropy(net.domain_head(h), d, reduction="sum")
    return out


# --- per-example gradient back-ends --------------------------------------------------------------


class _GhostLinear:
    """Per-example norms and reweighted sums for networks made of Linear layers (no per-example grads)."""

    def __init__(self, net: nn.Module, x, y, domain, blocks):
        records: dict[str, list[tuple[nn.Linear, torch.Tensor, torch.Tensor]]] = {p: [] for p in PARTS}
        handles = []
        for part, module in _parts(net).items():
            for sub in module.modules():
                if isinstance(sub, nn.Linear) and (sub.weight.requires_grad or (sub.bias is not None and sub.bias.requires_grad)):
                    handles.append(sub.register_forward_hook(lambda m, i, o, part=part: records[part].append((m, i[0], o))))
        try:
            losses = _block_losses(net, x, y, domain, blocks)
        finally:
            for h in handles:
                h.remove()
        for part in PARTS:
            mods = [m for m, _, _ in records[part]]
            if len(set(map(id, mods))) != len(mods):
                raise ValueError("ghost clipping needs each Linear layer to be called once per forward; use per_example='vmap'")
            if any(a.dim() != 2 for _, a, _ in records[part]):
                raise ValueError("ghost clipping needs 2-D Linear inputs; use per_example='vmap'")
        # (block, part) -> list of (module, activations a, output grads δ)
        self.layers: dict[tuple[str, str], list[tuple[nn.Linear, torch.Tensor, torch.Tensor]]] = {}
        for b in blocks:
            recs = [(part, r) for part in BLOCK_PARTS[b] for r in records[part]]
            outs = [o for _, (_, _, o) in recs]
            deltas = torch.autograd.grad(losses[b], outs, retain_graph=True, allow_unused=True)
            for (part, (m, a, o)), d in zip(recs, deltas):
                d = torch.zeros_like(o) if d is None else d
                self.layers.setdefault((b, part), []).append((m, a.detach(), d.detach()))

    def sq_norms(self, scales: dict[tuple[str, str], float]) -> dict[tuple[str, str], torch.Tensor]:
        out = {}
        for key, layers in self.layers.items():
            total = 0.0
            for m, a, d in layers:
                dn = (d * d).sum(1)
                if m.weight.requires_grad:
                    total = total + dn * (a * a).sum(1)
                if m.bias is not None and m.bias.requires_grad:
                    total = total + dn
            out[key] = total * scales[key] ** 2
        return out

    def weighted_sums(self, weights: dict[tuple[str, str], torch.Tensor], scales) -> dict[tuple[str, str], dict[nn.Parameter, torch.Tensor]]:
        out: dict[tuple[str, str], dict[nn.Parameter, torch.Tensor]] = {}
        for key, layers in self.layers.items():
            grads = {}
            for m, a, d in layers:
                wd = d * (weights[key] * scales[key])[:, None]
                if m.weight.requires_grad:
                    grads[m.weight] = wd.T @ a
                if m.bias is not None and m.bias.requires_grad:
                    grads[m.bias] = wd.sum(0)
            out[key] = grads
        return out


class _VmapGradients:
    """Materialised per-example gradients via torch.func (any per-example network)."""

    def __init__(self, net: nn.Module, x, y, domain, blocks):
        parts = _parts(net)
        self.params = {part: dict(trainable(net, part)) for part in PARTS}
        frozen = {part: {n: p.detach() for n, p in parts[part].named_parameters() if not p.requires_grad} for part in PARTS}
        buffers = {part: dict(parts[part].named_buffers()) for part in PARTS}

        def call(part, params, inp):
            return functional_call(parts[part], ({**params, **frozen[part]}, buffers[part]), (inp,))

        def label_loss(pf, py, xi, yi):
            h = call("feature", pf, xi[None])
            return nn.functional.cross_entropy(call("label", py, h), yi[None])

        def domain_loss(pf, pd, xi, yi):
            h = call("feature", pf, xi[None])
            return nn.functional.cross_entropy(call("domain", pd, h), torch.full((1,), domain, dtype=torch.long, device=xi.device))

        yv = torch.zeros(x.shape[0], dtype=torch.long, device=x.device) if y is None else y
        self.grads: dict[tuple[str, str], dict[str, torch.Tensor]] = {}
        for b in blocks:
            other = BLOCK_PARTS[b][1]
            fn = label_loss if b == "label" else domain_loss
            # randomness="different": each example draws its own dropout mask, as in a batched forward
            gf, go = vmap(grad(fn, argnums=(0, 1)), in_dims=(None, None, 0, 0), randomness="different")(
                {k: v.detach() for k, v in self.params["feature"].items()},
                {k: v.detach() for k, v in self.params[other].items()},
                x,
                yv,
            )
            self.grads[(b, "feature")] = gf
            self.grads[(b, other)] = go

    def sq_norms(self, scales):
        return {
            key: sum((g.flatten(1) ** 2).sum(1) for g in gs.values()) * scales[key] ** 2
            if gs
            else torch.zeros(0)
            for key, gs in self.grads.items()
        }

    def weighted_sums(self, weights, scales):
        out = {}
        for (b, part), gs in self.grads.items():
            w = weights[(b, part)] * scales[(b, part)]
            out[(b, part)] = {self.params[part][n]: torch.einsum("i,i...->...", w, g) for n, g in gs.items()}
        return out


def ghost_supported(net: nn.Module) -> bool:
    """Whether every trainable parameter of the network belongs to an ``nn.Linear`` layer."""
    for module in _parts(net).values():
        linear = {id(p) for m in module.modules() if isinstance(m, nn.Linear) for p in m.parameters()}
        if any(p.requires_grad and id(p) not in linear for p in module.parameters()):
            return False
    return True


# --- the private step ----------------------------------------------------------------------------


def clip_weights(sq_norms: torch.Tensor, clip: float) -> torch.Tensor:
    """Per-example factors min(1, C/‖g‖) that scale each gradient to norm ≤ C.

    A non-finite squared norm (an overflow in the tensor's dtype) raises before any noise is drawn:
    ``clamp`` keeps NaN, so the clip would not bound it and the noisy sum would be NaN exactly
    when that example was used.
    """
    if not bool(torch.isfinite(sq_norms).all()):
        raise NonFiniteError("a per-example gradient norm is NaN or infinite (overflow in "
                             f"{sq_norms.dtype}); refused before any noise was drawn")
    norms = torch.sqrt(torch.clamp(sq_norms, min=0.0))
    return torch.clamp(clip / torch.clamp(norms, min=1e-12), max=1.0)


def clipped_block_sums(
    net: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor | None,
    domain: int,
    blocks: Sequence[str],
    nu: float,
    spec: PrivacySpec,
    per_example: PerExampleMethod = "auto",
):
    """Sums of clipped per-example gradients of one batch, before noise.

    Returns ``({block: {parameter: Σ_i w_i g_i}}, norms before clipping, norms after clipping)``
    (norms of each example's joint vector). The domain block's feature-extractor part carries the
    gradient-reversal factor −ν. Joint grouping clips each example's concatenated vector over all
    blocks to ``spec.clip``; per-group grouping clips each (block, part) separately. Every
    trainable parameter of the blocks is present (zeros when the batch is empty).
    """
    keys = [(b, part) for b in blocks for part in BLOCK_PARTS[b]]
    scales = {(b, part): (-nu if (b == "domain" and part == "feature") else 1.0) for b, part in keys}
    params = {key: [p for _, p in trainable(net, key[1])] for key in keys}
    if per_example not in ("auto", "ghost", "vmap"):
        raise ValueError(f"per_example must be 'auto', 'ghost' or 'vmap', got {per_example!r}")
    norms_before = norms_after = torch.zeros(0, device=x.device)
    if x.shape[0] == 0:
        sums = {key: {p: torch.zeros_like(p) for p in params[key]} for key in keys}
    else:
        method = per_example
        if method == "auto":
            method = "ghost" if ghost_supported(net) else "vmap"
        elif method == "ghost" and not ghost_supported(net):
            raise ValueError("ghost clipping needs every trainable parameter to sit in an nn.Linear layer; use per_example='vmap'")
        backend = (_GhostLinear if method == "ghost" else _VmapGradients)(net, x, y, domain, blocks)
        sq = backend.sq_norms(scales)
        finite = torch.isfinite(sum(sq.values()))
        if not bool(finite.all()):
            # an example whose gradient overflows the dtype (a finite row of huge values) is clipped to 0: a
            # per-record map like the clip, so the sum keeps its sensitivity C; refusing the batch instead would
            # reveal that the row is in the data
            keep = finite.nonzero().squeeze(1)
            return clipped_block_sums(net, x[keep], None if y is None else y[keep], domain, blocks, nu, spec, per_example)
        if spec.grouping == "joint":
            total = sum(sq.values())
            w = clip_weights(total, spec.clip)
            weights = {key: w for key in keys}
            norms_before, norms_after = torch.sqrt(total), torch.sqrt(total) * w
        else:
            weights = {key: clip_weights(sq[key], spec.clip) for key in keys}
            joint = sum(sq[key] * weights[key] ** 2 for key in keys)
            norms_before, norms_after = torch.sqrt(sum(sq.values())), torch.sqrt(joint)
        sums = backend.weighted_sums(weights, scales)
        for key in keys:  # parameters not reached by this batch's loss
            for p in params[key]:
                sums[key].setdefault(p, torch.zeros_like(p))
    out: dict[str, dict[nn.Parameter, torch.Tensor]] = {b: {} for b in blocks}
    for (b, _), gs in sums.items():  # the parts of one block hold disjoint parameters
        out[b].update({p: g.detach() for p, g in gs.items()})
    return out, norms_before.detach(), norms_after.detach()


def private_block_gradients(
    net: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor | None,
    domain: int,
    blocks: Sequence[str],
    nu: float,
    spec: PrivacySpec,
    expected_batch: float,
    noise,
    per_example: PerExampleMethod = "auto",
    return_norms: bool = False,
):
    """Noisy, clipped mean gradients ``{block: {parameter: (Σ_i w_i g_i + N(0, σ²C²I)) / M}}`` of one batch.

    One noise draw per coordinate of the clipped sum (per block: θ_f's label and domain
    coordinates are distinct coordinates of the released vector), divided by the *expected*
    batch size M. ``noise`` is a :class:`~dpadapt.privacy.mechanisms.NoiseSource` (or a torch
    generator derived from one); the draw happens in :func:`~dpadapt.privacy.mechanisms.torch_gaussian_noise`.
    With ``return_norms`` the per-example norms before/after clipping are returned too.
    """
    if expected_batch <= 0:
        raise ValueError("expected_batch must be > 0")
    sums, before, after = clipped_block_sums(net, x, y, domain, blocks, nu, spec, per_example)
    std = spec.noise_multiplier * spec.clip
    gen = torch_noise(noise)
    out = {b: {p: torch_gaussian_noise(g, std, gen) / expected_batch for p, g in gs.items()} for b, gs in sums.items()}
    return (out, before, after) if return_norms else out


# --- generic DP-SGD on any per-example module (used by PRIMA's subspace heads) ---------------------


def per_example_clipped_sum(
    module: nn.Module, loss_fn, x: torch.Tensor, y: torch.Tensor, clip: float
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """``Σ_i min(1, C/‖g_i‖) g_i`` over the examples of a batch, per named trainable parameter.

    ``g_i`` is the gradient of ``loss_fn(module(x_i[None]), y_i[None])`` with respect to every
    trainable parameter of ``module`` (one concatenated vector per example, clipped jointly to
    ``clip``), computed with ``torch.func.vmap``. Returns the sums and the per-example norms
    before clipping. One example contributes at most C to the sum (ℓ2), so adding or removing one moves it by ≤ C and
    replacing one by ≤ 2C (Abadi et al. 2016).
    """
    check_per_example_modules(module, "the DP-SGD module")
    params = {n: p.detach() for n, p in module.named_parameters() if p.requires_grad}
    frozen = {n: p.detach() for n, p in module.named_parameters() if not p.requires_grad}
    buffers = dict(module.named_buffers())
    if x.shape[0] == 0:
        return {n: torch.zeros_like(p) for n, p in params.items()}, torch.zeros(0)

    def one(p, xi, yi):
        out = functional_call(module, ({**p, **frozen}, buffers), (xi[None],))
        return loss_fn(out, yi[None])

    grads = vmap(grad(one), in_dims=(None, 0, 0), randomness="different")(params, x, y)
    sq = sum(g.flatten(1).pow(2).sum(1) for g in grads.values())
    w = clip_weights(sq, clip)
    return {n: torch.einsum("i,i...->...", w, g) for n, g in grads.items()}, torch.sqrt(sq)
