"""scikit-learn / skada estimators running both PRIMA party steps in one process."""

from __future__ import annotations

from sklearn.utils.validation import check_is_fitted

from dpadapt.alignment.prima import (
    adapt_prima_source,
    predict_prima,
    release_prima_target,
    vote_scores,
)
from dpadapt.base import DAEstimator
from dpadapt.validation import check_random_state


class PRIMA(DAEstimator):
    """Private correlation alignment (Jin et al., IJCAI 2021), both parties protected.

    The target releases its noisy, PSD-repaired subspace second moments ((``epsilon``, ``delta``)-DP,
    replace-one); the source aligns each subspace with CORAL and trains one head per subspace with
    DP-SGD ((``source_epsilon``, ``delta``)-DP, add/remove; ``None`` = source unprotected); the target
    predicts by majority vote. ``guarantees_`` holds both parties' guarantees. Ablations of the
    paper: ``partition="full", psd_repair="none"`` (Basic), ``partition="random", psd_repair="none"``
    (RSE+Basic), ``partition="forward", psd_repair="none"`` (RSE+Basic+FS, not DP),
    ``partition="full", psd_repair="shrink"`` (Basic+Shrinking).

    Parameters are those of :func:`~dpadapt.alignment.prima.release_prima_target` and
    :func:`~dpadapt.alignment.prima.adapt_prima_source`.
    """

    _alignment = "coral"

    def __init__(
        self,
        epsilon: float = 2.0,
        delta: float = 1e-5,
        source_epsilon: float | None = 2.0,
        subspace_size: int = 512,
        partition: str = "random",
        psd_repair: str = "eig_clip",
        log_counts: bool = False,
        head: str = "logreg",
        hidden: tuple[int, ...] = (256, 128),
        epochs: int = 30,
        batch_size: int = 25,
        lr: float = 1.0,
        momentum: float = 0.0,
        max_grad_norm: float = 1.0,
        cov_budget_fraction: float = 0.2,
        joint: bool = True,
        reg: float = 1.0,
        noise_aware_reg: bool = True,
        sa_dim: int = 64,
        privacy_mode: str = "sound",
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.source_epsilon = source_epsilon
        self.subspace_size = subspace_size
        self.partition = partition
        self.psd_repair = psd_repair
        self.log_counts = log_counts
        self.head = head
        self.hidden = hidden
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.momentum = momentum
        self.max_grad_norm = max_grad_norm
        self.cov_budget_fraction = cov_budget_fraction
        self.joint = joint
        self.reg = reg
        self.noise_aware_reg = noise_aware_reg
        self.sa_dim = sa_dim
        self.privacy_mode = privacy_mode
        self.random_state = random_state

    def fit_domains(self, Xs, ys, Xt, yt=None):
        Xs, ys, Xt, _ = self._check_domains(Xs, ys, Xt, None, allow_sparse=True)
        rng = check_random_state(self.random_state)
        self.target_release_ = release_prima_target(
            Xt, self.epsilon, self.delta, subspace_size=self.subspace_size, partition=self.partition,
            psd_repair=self.psd_repair, log_counts=self.log_counts, privacy_mode=self.privacy_mode, rng=rng,
        )
        self.model_release_ = adapt_prima_source(
            self.target_release_, Xs, ys, source_epsilon=self.source_epsilon, delta=self.delta,
            alignment=self._alignment, sa_dim=self.sa_dim, head=self.head, hidden=self.hidden, epochs=self.epochs,
            batch_size=self.batch_size, lr=self.lr, momentum=self.momentum, max_grad_norm=self.max_grad_norm,
            cov_budget_fraction=self.cov_budget_fraction, joint=self.joint, reg=self.reg, noise_aware_reg=self.noise_aware_reg,
            privacy_mode=self.privacy_mode, rng=rng,
        )
        self.classes_ = self.model_release_["classes"]
        guarantees = [self.target_release_.guarantee]
        if self.source_epsilon is not None:
            guarantees.append(self.model_release_.guarantee)
        self._set_guarantees(*guarantees)
        return self

    def predict(self, X):
        check_is_fitted(self, "model_release_")
        return predict_prima(self.model_release_, X)

    def decision_function(self, X):
        check_is_fitted(self, "model_release_")
        return vote_scores(self.model_release_, X)


class PRISA(PRIMA):
    """PRIMA with Subspace Alignment (``sa_dim`` eigenvectors per subspace) instead of CORAL."""

    _alignment = "sa"
