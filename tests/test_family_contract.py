"""One contract for every registered method family (issue 11, "Done when", first item).

For each family of :func:`dpadapt.api.families` that provides ``example`` and ``run_parties``
(see :class:`dpadapt.api.Family`): plan → release → adapt runs on small synthetic data; every
release of a protected party has a finite ε and no raw row of that party; the label set in every release (and of the model) is the
public ``classes`` of the config, kept even for a class absent from the data; two runs with the
same integer ``random_state`` share their public randomness but not their noise, unless
``reproducible_noise=True``. A toy family defined here shows the check itself can fail.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from dpadapt import api
from dpadapt.privacy.guarantee import gaussian_guarantee
from dpadapt.privacy.mechanisms import gaussian, random_streams
from dpadapt.release import Release, raw_rows_in_release

EXPECTED = {"dpot", "classstats", "prima", "discrepancy", "dpswd", "dpda"}
SEED = 7


def _array(release: Release, name: str) -> Any:
    return release.arrays[name] if name in release.arrays else release.params.get(name)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except Exception:  # noqa: BLE001 - incomparable values are not equal
        return a == b


def _owner_rows(release: Release, data: Mapping[str, Any]) -> Any:
    return data["Xs"] if release.owner == "source" else data["Xt"]


def contract_violations(family: api.Family, seed: int = SEED) -> list[str]:
    """Every way ``family`` breaks the contract on its example (empty when it keeps it)."""
    problems: list[str] = []
    config, data = family.example(seed)
    labelled = family.classes_param is not None
    if not config.private or (labelled and config.classes is None) or config.random_state != seed:
        problems.append("example config must be private, with public classes and the given random_state")
        return problems
    if config.classes is not None:  # a label that no row carries stays in the label set: public, never inferred
        labels = list(config.classes)
        absent = max(labels) + 1 if all(isinstance(c, (int, np.integer)) for c in labels) else "absent-class"
        config = config.replace(classes=(*labels, absent))

    releases, model = family.run_parties(config, data)
    if not releases:
        problems.append("no release crossed between the parties")
    for rel in releases:
        if rel.owner in family.protected:  # a protected party's release: DP, and no raw row
            if not np.isfinite(rel.guarantee.epsilon):
                problems.append(f"release {rel.kind!r} of a protected party carries no finite ε")
            hits = raw_rows_in_release(rel, _owner_rows(rel, data))
            if hits:
                problems.append(f"raw private rows in release {rel.kind!r}: {hits[:3]}")
        stated = _array(rel, family.classes_param) if labelled else None
        if stated is not None and tuple(np.asarray(stated).tolist()) != config.classes:
            problems.append(f"release {rel.kind!r} states labels {stated!r}, not the public {config.classes!r}")
    if labelled and not any(_array(rel, family.classes_param) is not None for rel in releases):
        problems.append(f"no release states its label set under {family.classes_param!r}")
    if hasattr(model, "classes_") and tuple(np.asarray(model.classes_).tolist()) != config.classes:
        problems.append(f"the model's classes_ {model.classes_!r} are not the public {config.classes!r}")

    again, _ = family.run_parties(config, data)
    if not family.noisy_arrays:
        problems.append("the family declares no noisy array")
    for name in family.public_arrays:
        if not all(_same(_array(a, name), _array(b, name)) for a, b in zip(releases, again) if _array(a, name) is not None):
            problems.append(f"public array {name!r} differs between two runs with random_state={seed}")
    for name in family.noisy_arrays:
        pairs = [(a, b) for a, b in zip(releases, again) if name in a.arrays]
        if not pairs:
            problems.append(f"noisy array {name!r} is in no release")
        elif any(_same(a.arrays[name], b.arrays[name]) for a, b in pairs):
            problems.append(f"noisy array {name!r} is the same in two runs with random_state={seed}: the noise is replayable")

    repro = config.replace(reproducible_noise=True)
    one, _ = family.run_parties(repro, data)
    two, _ = family.run_parties(repro, data)
    for name in family.noisy_arrays:
        if not all(_same(a.arrays[name], b.arrays[name]) for a, b in zip(one, two) if name in a.arrays):
            problems.append(f"noisy array {name!r} differs between two runs with reproducible_noise=True")
    return problems


def _public_facts(config: api.Config, data: Mapping[str, Any]) -> dict[str, Any]:
    """Public facts of the example: sizes, dimension and the public label set."""
    return {
        "n_source": len(data["Xs"]),
        "n_target": len(data["Xt"]),
        "n_features": np.asarray(data["Xs"]).shape[1],
        "classes": config.classes,
    }


def _contract_families() -> list[str]:
    return sorted(name for name, f in api.families().items() if f.example is not None and f.run_parties is not None)


def test_every_expected_family_is_registered():
    """Fails until every family's branch has landed (each registers itself)."""
    assert EXPECTED <= set(api.families())


def test_every_registered_family_provides_a_contract_example():
    missing = sorted(name for name, f in api.families().items() if f.example is None or f.run_parties is None)
    assert not missing, f"families without example/run_parties for the contract test: {missing}"


@pytest.mark.parametrize("name", _contract_families())
def test_family_keeps_the_contract(name):
    assert contract_violations(api.families()[name]) == []


# --- a toy family: proves the contract check works and can fail ---------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToyConfig(api.Config):
    """Noisy class means of the source, released with a public random rotation."""

    family = "toy"
    clip: float = api.param(1.0, low=0.0, low_open=True, help="row norm bound")


def toy_plan(config: ToyConfig, facts: Mapping[str, Any]) -> api.Plan:
    k = len(config.required_classes())
    g = gaussian_guarantee(4.0, party="source", unit="record", relation="replace_one",
                           delta=config.resolved_delta(facts["n_source"]), theorem="Gaussian mechanism")
    return api.Plan(family="toy", kind="means", config=config, facts=dict(facts), guarantee=g,
                    calibration={"sigma": 4.0 * 2 * config.clip * k, "sensitivity": 2 * config.clip * k})


def toy_release(plan: api.Plan, Xs, ys, public, noise, *, leak=False, inferred=False, public_noise=False) -> Release:
    config = plan.config
    classes = tuple(np.unique(ys).tolist()) if inferred else config.classes
    Xc = Xs / np.maximum(1.0, np.linalg.norm(Xs, axis=1, keepdims=True) / config.clip)
    rotation = public.standard_normal((Xs.shape[1], Xs.shape[1]))
    means = np.stack([Xc[ys == c].sum(axis=0) if np.any(ys == c) else np.zeros(Xs.shape[1]) for c in classes])
    if public_noise:  # the defect of main: noise from the public stream
        noisy = means + public.standard_normal(means.shape) * plan.calibration["sigma"]
    else:
        noisy = gaussian(means, sigma=plan.calibration["sigma"], sensitivity=plan.calibration["sensitivity"], noise=noise).value
    arrays = {"means": noisy, "rotation": rotation}
    if leak:
        arrays["example_row"] = Xs[:1]
    return Release(method="toy", kind="means", owner="source", arrays=arrays, guarantee=plan.guarantee,
                   params={"classes": list(classes)})


class ToyModel:
    def __init__(self, means: np.ndarray, classes: tuple) -> None:
        self.means, self.classes_ = means, np.asarray(classes)

    def predict(self, X):
        return self.classes_[np.argmin(((X[:, None, :] - self.means[None]) ** 2).sum(-1), axis=1)]


def toy_adapt(release: Release, Xt, config: ToyConfig) -> ToyModel:
    return ToyModel(release["means"], tuple(release.params["classes"]))


def toy_family(**defects: bool) -> api.Family:
    def example(seed: int):
        rng = np.random.default_rng(seed)
        ys = rng.integers(0, 3, 60)
        Xs = rng.normal(size=(60, 4)) + ys[:, None]
        Xt = rng.normal(size=(40, 4)) + 0.5
        return ToyConfig(epsilon=1.0, classes=(0, 1, 2), random_state=seed), {"Xs": Xs, "ys": ys, "Xt": Xt}

    def run_parties(config: ToyConfig, data):
        public, noise = random_streams(config.random_state, reproducible_noise=config.reproducible_noise)
        plan = toy_plan(config, _public_facts(config, data))
        rel = toy_release(plan, data["Xs"], data["ys"], public, noise, **defects)
        return [rel], toy_adapt(rel, data["Xt"], config)

    return api.Family(name="toy", config=ToyConfig, protected=("source",), plan=toy_plan, release=toy_release,
                      adapt=toy_adapt, estimator=object, example=example, run_parties=run_parties,
                      public_arrays=("rotation",), noisy_arrays=("means",))


def test_the_contract_passes_for_a_sound_toy_family():
    assert contract_violations(toy_family()) == []


def test_the_contract_catches_a_leaked_raw_row():
    assert any("raw private rows" in p for p in contract_violations(toy_family(leak=True)))


def test_the_contract_catches_an_inferred_label_set():
    problems = contract_violations(toy_family(inferred=True))
    assert any("not the public" in p for p in problems)


def test_the_contract_catches_noise_drawn_from_the_public_stream():
    problems = contract_violations(toy_family(public_noise=True))
    assert any("replayable" in p for p in problems)


def test_a_registered_toy_family_is_run_by_the_registry(monkeypatch):
    registry = dict(api.families())
    monkeypatch.setattr(api, "_FAMILIES", registry)
    api.register(toy_family())
    assert "toy" in _contract_families()
    assert contract_violations(api.families()["toy"]) == []



def test_every_family_names_an_estimator_of_its_own_config():
    """``Family.estimator`` — the class, or its dotted name where the family's module leaves scikit-learn unimported
    (``import dpadapt.sound`` stays light) — resolves to the ConfigEstimator whose hyper-parameters are the Config."""
    from dpadapt.base import ConfigEstimator

    for name, fam in api.families().items():
        cls = fam.estimator_class()
        assert isinstance(cls, type) and issubclass(cls, ConfigEstimator) and cls.config_class is fam.config, name
    assert isinstance(api.family("sound").estimator, str)
    with pytest.raises(AttributeError, match="NoSuchEstimator"):  # a wrong name is an error, never a silent None
        dataclasses.replace(api.family("sound"), estimator="dpadapt.sound.NoSuchEstimator").estimator_class()


# --- every family's mechanism is audited, with an under-noised control ---------------------------

#: For each family, the statistical audits of the mechanisms its sound releases go through: a test
#: that passes at the claimed ε AND a control (same or separate test) that under-noises and fails.
MECHANISM_AUDITS = {
    "dpot": ["test_class_moment_mechanism.py::test_class_moment_audit_passes_and_undernoised_control_fails",
             "test_dpot.py::test_row_release_audit_worst_case_and_undernoised_control"],
    "classstats": ["test_class_statistics_mechanism.py::test_class_statistics_audit_passes_and_undernoised_control_fails"],
    "prima": ["test_class_statistics_mechanism.py::test_class_statistics_audit_passes_and_undernoised_control_fails",
              "test_prima.py::test_covariance_release_audit_and_underconfigured_control"],
    "discrepancy": ["test_discrepancy.py::test_report_noisy_min_step_audit",
                    "test_mechanisms_audit.py::test_gaussian_mechanism_audit",
                    "test_mechanisms_audit.py::test_gaussian_mechanism_audit_catches_under_noise"],
    "dpswd": ["test_dpswd.py::test_projection_release_audit",
              "test_deep_mechanisms.py::test_sliced_histogram_release_audit",
              "test_deep_mechanisms.py::test_sliced_histogram_release_audit_fails_when_under_noised"],
    "dpda": ["test_dpda.py::test_audit_one_step_neighbouring_target_sets"],
    "sound": ["test_class_moment_mechanism.py::test_class_moment_audit_passes_and_undernoised_control_fails"],
}


def _test_source(node: str) -> str:
    import ast
    from pathlib import Path

    module, name = node.split("::")
    tree = ast.parse((Path(__file__).parent / module).read_text(encoding="utf-8"))
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert found, f"{node} does not exist"
    return ast.unparse(found[0])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_family_mechanisms_have_an_audit_and_an_under_noised_control(name):
    """The audits run as their own tests; here: every family names them, and they include a failing control."""
    assert name in api.families() and name in MECHANISM_AUDITS, f"no mechanism audit declared for family {name!r}"
    sources = [_test_source(node) for node in MECHANISM_AUDITS[name]]
    assert any("epsilon_lower_bound" in s or "_audit(" in s or "audit(" in s for s in sources)
    assert any("assert not" in s or "under_noised" in s for s in sources), f"{name}: no under-noised control"


def test_every_registered_family_declares_its_audits():
    assert set(api.families()) <= set(MECHANISM_AUDITS)
