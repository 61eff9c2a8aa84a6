"""DPDA and G-DPDA: DANN trained with DP-SGD on the protected domain(s) (Wang et al., IEEE TIFS 2020).

Threat model (central DP, spec 05 §1): whoever trains sees the raw data; the *trained model*
(every parameter, released after the last step) is what the guarantee covers. One individual is
one record (replace-one neighbours, the dataset sizes public: the sampling rates and step counts
are computed from them and stated), per protected domain.

DPDA — target protected, source public
    Per step: a public source batch gives the label gradient (G_f, G_y) and the source-domain
    gradient (G_d, reversed into G_f) without noise; a Poisson batch of target rows (rate
    q = M/N_t) gives, per row, the gradient of the target domain loss with respect to *every*
    trainable parameter it reaches — G_d and, through the reversal layer (×−ν), G_f. In sound
    mode that concatenated vector is clipped to C, summed, and one N(0, σ²C²I) draw is added;
    one Poisson-subsampled Gaussian event (multiplier σ, rate q) per step, accounted by dp-accounting's
    replace-one privacy-loss distribution. The source step reads
    no target row, so it costs the target nothing.

G-DPDA — both protected, accounted separately
    The source stream is also DP-SGD: per source row, its label-loss gradient (G_f, G_y) and its
    source-domain gradient (G_d, reversed G_f) form one vector clipped to C_s with one draw of
    noise; its own accountant at rate M/N_s. Target as in DPDA.

Stopping rule: the number of steps is fixed *before* training — the largest T that keeps every
protected party within its (ε, δ) budget, capped by ``epochs`` (the a priori training length);
with ``noise_multiplier=None`` σ is instead calibrated so that exactly ``epochs`` epochs meet the
budget. Target test accuracy is never consulted. The reported ε is the one actually spent by the
T steps run (≤ the budget).

Paper mode reproduces the published procedure: separate clipping (and noise) per parameter group
(Eqs. 14–15; G-DPDA: two source phases on separate samples, Eqs. 19–22) with T chosen by the
paper's accountant (multiplier σ per phase, add/remove RDP; basic composition of the two source
phases). It is charged what it really costs — multiplier σ/√G for G separately clipped groups, the
two source phases composed, under replace-one as in sound mode — and marked not valid, with the
paper's claimed (add/remove) ε in ``details``.
"""

from __future__ import annotations

from dpadapt.configs.deep import DPDAConfig, GDPDAConfig
from dpadapt.deep.dann import DANN, DANNNetwork, Stream
from dpadapt.deep.dpsgd import check_per_example_modules
from dpadapt.privacy.families.dpda import THEOREM, PrivatePlan, plan_party  # noqa: F401


class DPDA(DANN):
    """DANN with the target domain protected by DP-SGD (source public).

    Guarantee: (ε, δ)-DP for every record of the target training set (replace-one neighbours, n public)
    with respect to the released network, by the DP-SGD theorem (see :data:`THEOREM`); ε is
    the one actually spent, ``guarantee_.details`` holds σ, C, q and the step count.

    Hyper-parameters: :class:`~dpadapt.configs.deep.DPDAConfig`. By default
    (``noise_multiplier=None``) σ is calibrated so that the configured training length
    (``epochs``, at least ``min_steps`` steps) spends exactly ε; a given ``noise_multiplier``
    makes ε a cap instead (training stops when it is reached).
    """

    config_class = DPDAConfig

    def _check_private_paths(self, net: DANNNetwork, source_private: bool) -> None:
        check_per_example_modules(net.feature_extractor, "the feature extractor (on the target's private path)")
        check_per_example_modules(net.domain_head, "the domain head (on the target's private path)")
        if source_private:
            check_per_example_modules(net.label_head, "the label head (on the source's private path)")

    def plan(self, n_source: int, n_target: int) -> dict[str, PrivatePlan]:
        """The a-priori privacy plan (σ, rate, step budget) from the public dataset sizes only."""
        cfg = self.make_config()
        cap = self._total_steps(n_source, n_target)
        target = plan_party(
            "target", n_target, int(cfg.batch_size), cfg.epsilon, cfg.resolved_delta(n_target),
            cfg.noise_multiplier, float(cfg.max_grad_norm), cfg.privacy_mode, (("domain",),), (("domain",),), cap,
        )
        return {"target": target}

    def fit_domains(self, Xs, ys, Xt, yt=None):
        """Fit on public labelled source ``(Xs, ys)`` and private unlabelled target ``Xt``."""
        Xs, ys, Xt, net, rng, noise = self._prepare(Xs, ys, Xt, yt)
        self._check_private_paths(net, source_private=False)
        plans = self.plan(Xs.shape[0], Xt.shape[0])
        t = plans["target"]
        streams = [
            Stream("source", "source", Xs, ys, 0, ("label", "domain"), self._rate(Xs.shape[0])),
            Stream("target", "target", Xt, None, 1, ("domain",), t.rate, t.spec),
        ]
        return self._fit_plans(net, streams, plans, Xs, Xt, rng, noise)

    def _fit_plans(self, net, streams, plans, Xs, Xt, rng, noise):
        steps = min(p.max_steps for p in plans.values())
        guarantees = [p.guarantee(steps) for p in plans.values()]  # fixed before training
        self.plans_ = plans
        self._train(net, streams, steps, self._steps_per_epoch(Xs.shape[0], Xt.shape[0]), rng, noise, self.per_example)
        self._set_guarantees(*guarantees)
        return self


class GDPDA(DPDA):
    """G-DPDA: DANN with both the source and the target protected by DP-SGD, accounted separately.

    Guarantees: ``guarantees_['target']`` (ε_t, δ_t) for every target training record and
    ``guarantees_['source']`` (ε_s, δ_s) for every source training record (its features *and*
    label), replace-one neighbours within each domain (its size public), with respect to the released network.
    The label set (the label head's width) is the public ``classes`` parameter, required; a
    source label outside it is an error.

    Hyper-parameters: :class:`~dpadapt.configs.deep.GDPDAConfig` (``source_epsilon``,
    ``source_delta``, ``source_noise_multiplier``, ``source_max_grad_norm`` on top of DPDA's).
    """

    config_class = GDPDAConfig

    def plan(self, n_source: int, n_target: int) -> dict[str, PrivatePlan]:
        plans = super().plan(n_source, n_target)
        cfg = self.make_config()
        cap = self._total_steps(n_source, n_target)
        sigma_s = cfg.noise_multiplier if cfg.source_noise_multiplier is None else cfg.source_noise_multiplier
        clip_s = cfg.max_grad_norm if cfg.source_max_grad_norm is None else cfg.source_max_grad_norm
        plans["source"] = plan_party(
            "source", n_source, int(cfg.batch_size), cfg.source_epsilon, cfg.source_delta, sigma_s,
            float(clip_s), cfg.privacy_mode, (("label", "domain"),), (("label",), ("domain",)), cap,
        )
        return plans

    def fit_domains(self, Xs, ys, Xt, yt=None):
        """Fit on private labelled source ``(Xs, ys)`` and private unlabelled target ``Xt``."""
        Xs, ys, Xt, net, rng, noise = self._prepare(Xs, ys, Xt, yt, labels_private=True)
        self._check_private_paths(net, source_private=True)
        plans = self.plan(Xs.shape[0], Xt.shape[0])
        s, t = plans["source"], plans["target"]
        streams = [
            Stream(f"source-{'+'.join(blocks)}", "source", Xs, ys, 0, blocks, s.rate, s.spec) for blocks in s.phases
        ]
        streams.append(Stream("target", "target", Xt, None, 1, ("domain",), t.rate, t.spec))
        return self._fit_plans(net, streams, plans, Xs, Xt, rng, noise)
