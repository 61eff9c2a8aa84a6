"""The selection rule of the sound designs: public facts → one concrete choice (issue 23).

Fixed on the development pairs only (Office-Caltech GoogLeNet A→D, A→W, D→A, W→A; SURF A→C, C→A, A→D,
C→W; Amazon bow5000 K→B, D→E, B→K, E→D; UCI Heart Cleveland ↔ Hungary) by
``benchmarks/selection/sound/sound_select.py`` and written down in ``benchmarks/selection/sound/README.md`` before any
report-pair run. It reads only public facts: the declared feature type (``dense``, ``counts``,
``table``), ε (None or the grid point at or below it: 1, 2, 4, 8; ε < 1 uses the ε = 1 entry) and the
feature dimension d (the ``features`` space is allowed only for d ≤ 1100 at a finite ε, where the
noise of the d × d moment grows with d²; without noise for d ≤ 8192, a d × d matrix in memory). Never
a target label, never a private statistic. ``n`` and ``K`` are accepted for the record but the dev pairs gave no
reason to branch on them.
"""

from __future__ import annotations

import dataclasses

DESIGNS = ("ssp", "classstats", "ncm", "dplr")
EPSILON_GRID = (1.0, 2.0, 4.0, 8.0)
MAX_FEATURES_SPACE = 1100
MAX_FEATURES_SPACE_NOISE_FREE = 8192

#: (feature type, ε grid point or None) → the Choice fields, as printed by benchmarks/selection/sound/sound_select.py
#: (selection round 3 over the portfolio :data:`DESIGNS`, the ``ssp`` receiver classifier ``ncm``, ``lda`` or
#: ``ridge``; criterion: the worst seed's gap to the best DP source-only mean; no cell names ``ncm``/``dplr``)
RULE: dict[tuple[str, float | None], dict] = {
    ('counts', 1.0): {'design': 'ssp', 'space': 'pca', 'k': 20, 'norm': 'l2', 'classifier': 'ridge', 'ridge_scale': 4.0, 'ridge_floor': 0.3, 'refinement': 'none', 'min_agreement': 1.0},
    ('counts', 2.0): {'design': 'ssp', 'space': 'pca', 'k': 50, 'norm': 'l2', 'classifier': 'ncm', 'ridge_scale': 0.0, 'ridge_floor': 0.0, 'refinement': 'none', 'min_agreement': 1.0},
    ('counts', 4.0): {'design': 'ssp', 'space': 'pca', 'k': 50, 'norm': 'l2', 'classifier': 'ridge', 'ridge_scale': 0.5, 'ridge_floor': 3.0, 'refinement': 'none', 'min_agreement': 1.0},
    ('counts', 8.0): {'design': 'ssp', 'space': 'pca', 'k': 50, 'norm': 'l2', 'classifier': 'ridge', 'ridge_scale': 0.5, 'ridge_floor': 3.0, 'refinement': 'none', 'min_agreement': 1.0},
    ('counts', None): {'design': 'ssp', 'space': 'features', 'k': 0, 'norm': 'l2', 'classifier': 'ridge', 'ridge_scale': 4.0, 'ridge_floor': 3.0, 'refinement': 'none', 'min_agreement': 1.0},
    ('dense', 1.0): {'design': 'ssp', 'space': 'pca', 'k': 20, 'norm': 'l2', 'classifier': 'ncm', 'ridge_scale': 0.0, 'ridge_floor': 0.0, 'refinement': 'none', 'min_agreement': 1.0},
    ('dense', 2.0): {'design': 'classstats', 'space': 'pca', 'k': 20, 'norm': 'l2', 'classifier': 'prototypes', 'refinement': 'ot', 'ridge_scale': 0.0, 'ridge_floor': 0.0, 'min_agreement': 1.0},
    ('dense', 4.0): {'design': 'classstats', 'space': 'pca', 'k': 20, 'norm': 'l2', 'classifier': 'prototypes', 'refinement': 'ot', 'ridge_scale': 0.0, 'ridge_floor': 0.0, 'min_agreement': 1.0},
    ('dense', 8.0): {'design': 'ssp', 'space': 'pca', 'k': 20, 'norm': 'l2', 'classifier': 'lda', 'ridge_scale': 4.0, 'ridge_floor': 10.0, 'refinement': 'none', 'min_agreement': 1.0},
    ('dense', None): {'design': 'classstats', 'space': 'pca', 'k': 20, 'norm': 'l2', 'classifier': 'prototypes', 'refinement': 'ot', 'ridge_scale': 0.0, 'ridge_floor': 0.0, 'min_agreement': 1.0},
    ('table', 1.0): {'design': 'ssp', 'space': 'features', 'k': 0, 'norm': 'l2', 'classifier': 'lda', 'ridge_scale': 4.0, 'ridge_floor': 10.0, 'refinement': 'none', 'min_agreement': 1.0},
    ('table', 2.0): {'design': 'ssp', 'space': 'features', 'k': 0, 'norm': 'l2', 'classifier': 'lda', 'ridge_scale': 4.0, 'ridge_floor': 10.0, 'refinement': 'none', 'min_agreement': 1.0},
    ('table', 4.0): {'design': 'ssp', 'space': 'features', 'k': 0, 'norm': 'l2', 'classifier': 'lda', 'ridge_scale': 4.0, 'ridge_floor': 10.0, 'refinement': 'none', 'min_agreement': 1.0},
    ('table', 8.0): {'design': 'ssp', 'space': 'features', 'k': 0, 'norm': 'l2', 'classifier': 'lda', 'ridge_scale': 2.0, 'ridge_floor': 0.01, 'refinement': 'none', 'min_agreement': 1.0},
    ('table', None): {'design': 'ssp', 'space': 'features', 'k': 0, 'norm': 'l2', 'classifier': 'ridge', 'ridge_scale': 4.0, 'ridge_floor': 0.1, 'refinement': 'none', 'min_agreement': 1.0},
}


@dataclasses.dataclass(frozen=True)
class Choice:
    """One concrete sound design (``design`` ∈ :data:`DESIGNS`): space, basis size k, receiver classifier, ridge, refinement."""

    design: str
    space: str
    k: int
    norm: str
    classifier: str
    ridge_scale: float
    ridge_floor: float
    refinement: str
    min_agreement: float

    def to_params(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_params(cls, params: dict) -> Choice:
        return cls(**{f.name: params[f.name] for f in dataclasses.fields(cls)})


def grid_point(epsilon: float | None) -> float | None:
    """The rule's ε entry: None for the non-private run, else the largest grid ε ≤ ε (at least 1)."""
    if epsilon is None:
        return None
    return max([g for g in EPSILON_GRID if g <= epsilon], default=EPSILON_GRID[0])


def choose(*, feature_type: str, n: int, n_classes: int, n_features: int, epsilon: float | None) -> Choice:
    """The rule (see ``benchmarks/selection/sound/README.md``): public facts in, a :class:`Choice` out."""
    fields = dict(RULE[(feature_type, grid_point(epsilon))])
    limit = MAX_FEATURES_SPACE_NOISE_FREE if epsilon is None else MAX_FEATURES_SPACE
    if fields["design"] == "ssp" and fields["space"] == "features" and n_features > limit:
        raise ValueError(f"the rule's 'features' space is for d ≤ {limit} (got d = {n_features}); "
                         "declare feature_type='dense' or 'counts' for wide data")
    return Choice(**fields)
