"""The ``classstats`` route of :class:`dpadapt.sound.SoundDA`: today's class-statistics design (issue 12).

Runs :func:`dpadapt.classstats.run_parties` unchanged: the receiver's top-k basis (a disclosure of the
unprotected receiver), ONE Gaussian release of the source's per-class sums and counts in it, the
receiver's refinement (the rule's ``refinement``, ``ot``). Its Guarantee is that release's:
(ε, δ)-DP per source record, labels included, Δ = 2 replace-one / √2 add/remove, analytic Gaussian
(Balle & Wang 2018, Thm. 8) — see :mod:`dpadapt.classstats`.
"""

from __future__ import annotations

from dpadapt import classstats
from dpadapt.sound.rule import Choice


def run(config, Xs, ys, Xt, choice: Choice):
    """(basis release, statistics release, model) of the class-statistics design with the rule's k and refinement."""
    cfg = classstats.Config(
        epsilon=config.epsilon, delta=config.delta, privacy_mode=config.privacy_mode, classes=config.classes,
        random_state=config.random_state, reproducible_noise=config.reproducible_noise, k=choice.k,
        feature_type="counts" if config.use_log1p() else "dense", relation=config.relation, refinement=choice.refinement,
    )
    return classstats.run_parties(cfg, Xs, ys, Xt)
