"""scikit-learn / skada estimators running the PRIMA party steps in one process."""

from __future__ import annotations

from typing import ClassVar

from sklearn.utils.validation import check_is_fitted

from dpadapt.alignment import prima
from dpadapt.api import ConfigEstimator, Family, register
from dpadapt.base import binary_scores
from dpadapt.configs.prima import PrisaConfig
from dpadapt.privacy.mechanisms import random_streams


class PRIMA(ConfigEstimator):
    """Private adaptation with both parties protected (Jin et al., IJCAI 2021, made sound).

    Sound default (``source_release="class_statistics"``): the source releases one Gaussian on its
    per-class sums and counts ((``epsilon``, ``delta``)-DP, replace-one, labels covered; the label
    set ``classes`` is public and required); the target refines the prototypes on its own rows and
    keeps the classifier (it releases nothing: ε = 0). ``source_release="dpsgd_heads"`` runs the
    published design: target's noisy subspace second moments ((ε, δ)-DP, replace-one), CORAL per
    subspace and DP-SGD heads ((ε, δ)-DP, replace-one, n public), majority vote. ``epsilon=None`` is the
    non-private counterpart. ``guarantees_`` holds both parties' guarantees.
    """

    config_class: ClassVar[type] = prima.PrimaConfig

    def fit_domains(self, Xs, ys, Xt, yt=None):
        Xs, ys, Xt, _ = self._check_domains(Xs, ys, Xt, None, allow_sparse=True)
        config = self.make_config()
        public, noise = random_streams(config.random_state, reproducible_noise=config.reproducible_noise)
        facts = {"n_source": Xs.shape[0], "n_target": Xt.shape[0], "n_features": Xs.shape[1]}
        self.plan_ = plan = prima.plan(config, facts)
        data = {"Xs": Xs, "ys": ys}
        if plan.kind == "dpsgd_heads":
            self.target_release_ = data["target_release"] = prima.release_target(plan, Xt, public, noise)
        self.model_release_ = prima.release(plan, data, public, noise)
        self.model_ = prima.adapt(self.model_release_, Xt, config)
        self.classes_ = self.model_.classes_
        if config.private:
            self._set_guarantees(plan.calibration["target_guarantee"], plan.guarantee)
        else:
            self._set_guarantees()
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict(X)

    def decision_function(self, X):
        """The target's class scores (prototype scores, or head votes plus a tie-break < 1), whose argmax ``predict``
        takes: (n, K); for two classes (scikit-learn's shape) the 1-D ``s₁ − s₀``, > 0 exactly where ``predict`` picks
        ``classes_[1]`` (no prior is applied after the scores)."""
        check_is_fitted(self, "model_")
        return binary_scores(self.model_.decision_function(X))


def contract_example(random_state: int) -> tuple[prima.PrimaConfig, dict]:
    """The family contract's example (``api.Family.example``): the sound protocol on 60 + 40 rows of blobs."""
    from dpadapt.datasets.synthetic import contract_blobs

    config = prima.PrimaConfig(epsilon=1.0, classes=(0, 1, 2), random_state=random_state, basis_dim=4)
    return config, contract_blobs(random_state)


def contract_run(config: prima.PrimaConfig, data: dict) -> tuple[list, object]:
    """The family contract's ``run_parties``: plan → (target release) → source release → target's model."""
    public, noise = random_streams(config.random_state, reproducible_noise=config.reproducible_noise)
    facts = {"n_source": data["Xs"].shape[0], "n_target": data["Xt"].shape[0], "n_features": data["Xs"].shape[1]}
    plan = prima.plan(config, facts)
    releases, inputs = [], {"Xs": data["Xs"], "ys": data["ys"]}
    if plan.kind == "dpsgd_heads":
        inputs["target_release"] = prima.release_target(plan, data["Xt"], public, noise)
        releases.append(inputs["target_release"])
    releases.append(prima.release(plan, inputs, public, noise))
    return releases, prima.adapt(releases[-1], data["Xt"], config)


class PRISA(PRIMA):
    """PRIMA's heads protocol with Subspace Alignment instead of CORAL (see :class:`PrisaConfig`)."""

    config_class: ClassVar[type] = PrisaConfig


register(Family(
    name="prima", config=prima.PrimaConfig, protected=("source", "target"), plan=prima.plan, release=prima.release,
    adapt=prima.adapt, estimator=PRIMA, example=contract_example, run_parties=contract_run,
    public_arrays=("basis_seed",), noisy_arrays=("sums", "counts"),
    summary="both parties protected: DP class statistics of the source, refined on the target's own rows "
            "(or the published covariances + DP-SGD heads)",
))
