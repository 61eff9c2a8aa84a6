"""Issue 27: the nine breaks of the independent privacy review, each run as an attack (D vs D′ where it applies).

The registry-wide attacks (every family, route and CLI method) are in ``tests/test_attacks.py``; this
file holds one concrete run of each reported break, as the reviewer ran it.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from dpadapt.cli.main import main
from dpadapt.io import save_table
from dpadapt.privacy.ledger import Ledger, fingerprint

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"


def _one_class_pair(rng, n=60, d=6):
    """D: every record of class 0 but one of class 1; D′: that record relabelled to class 0 (a one-class source)."""
    Xs = rng.normal(size=(n, d))
    ys = np.zeros(n, dtype=int)
    ys[0] = 1
    ys_prime = np.zeros(n, dtype=int)
    Xt = rng.normal(size=(40, d)) + 0.3
    return Xs, ys, ys_prime, Xt


def _request(folder, d: int, n: int, epsilon: str, rows=None) -> None:
    """The receiver's release request (`dpadapt request`) for a 2-class source of ``n`` rows, from target rows ``rows``."""
    rows = np.clip(np.random.default_rng(3).normal(size=(40, d)), -1, 1) if rows is None else rows
    save_table(folder / "receiver.npz", rows)
    assert main(["request", "--data", str(folder / "receiver.npz"), "--classes", "0,1", "--n-source", str(n),
                 "--epsilon", epsilon, "--delta", "1e-5", "--out", str(folder / "request.release")]) == 0


def _released(fit) -> bool:
    try:
        fit()
    except (ValueError, TypeError):
        return False
    return True


# --- item 1: a one-class source is a neighbour of a two-class source: release ⇔ release ----------------------


@pytest.mark.parametrize("feature_type, epsilon", [("dense", 1.0), ("dense", 8.0), ("table", 1.0), ("counts", 8.0)])
def test_sound_one_class_source_is_released_like_its_neighbour(rng, feature_type, epsilon):
    from dpadapt.sound import SoundDA

    Xs, ys, ys_prime, Xt = _one_class_pair(rng)
    if feature_type == "counts":
        Xs, Xt = np.abs(Xs) * 3, np.abs(Xt) * 3
    if feature_type == "table":
        Xs, Xt = np.clip(Xs, -1, 1), np.clip(Xt, -1, 1)
    est = SoundDA(epsilon=epsilon, delta=1e-5, classes=(0, 1), random_state=0)  # the map is read off the rows
    released = [_released(lambda y=y: est.fit_domains(Xs, y, Xt)) for y in (ys, ys_prime)]
    assert released == [True, True], f"release or none reveals the record (D, D′) → {released}"


def test_cli_release_sound_one_class_source_is_released_like_its_neighbour(tmp_path, monkeypatch, capsys, rng):
    Xs, ys, ys_prime, _ = _one_class_pair(rng)
    Xs = np.clip(Xs, -1, 1)
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    codes = []
    _request(tmp_path, Xs.shape[1], len(ys), "1")
    for name, y in (("d", ys), ("d_prime", ys_prime)):
        save_table(tmp_path / f"{name}.npz", Xs, y)
        Ledger(tmp_path / "ledger.sqlite").set_budget("source", fingerprint(tmp_path / f"{name}.npz"), 10.0, 1e-5)
        codes.append(main(["release", "sound", "--request", str(tmp_path / "request.release"), "--data",
                           str(tmp_path / f"{name}.npz"), "--classes", "0,1", "--epsilon", "1", "--delta", "1e-5", "--out", str(tmp_path / f"{name}.release")]))
    assert codes == [0, 0], capsys.readouterr().err


# --- item 2: the exported mechanisms called with a numpy Generator --------------------------------------------


def _exported_calls():
    from dpadapt import privacy

    return {
        "gaussian_mechanism": lambda noise: privacy.gaussian_mechanism(np.zeros(4), 1.0, 1.0, 1e-5, noise, party="source"),
        "gaussian_matrix_release": lambda noise: privacy.gaussian_matrix_release(np.zeros((2, 2)), 1.0, 1.0, 1e-5, noise, party="source"),
        "laplace_mechanism": lambda noise: privacy.laplace_mechanism(np.zeros(4), 1.0, 1.0, noise, party="source"),
        "randomized_response": lambda noise: privacy.randomized_response(np.arange(40) % 3, 3, 1.0, noise),
    }


@pytest.mark.parametrize("name", sorted(_exported_calls()))
def test_exported_mechanism_with_a_numpy_generator_is_marked_invalid(name):
    call = _exported_calls()[name]
    one, two = call(np.random.default_rng(5)), call(np.random.default_rng(5))
    assert np.array_equal(one.value, two.value)  # the attack: the same seed replays the noise
    g = one.guarantee
    assert not g.valid and any("numpy" in r and "Generator" in r for r in g.reasons), g.report()


@pytest.mark.parametrize("name", sorted(_exported_calls()))
def test_exported_mechanism_with_a_noise_source_is_valid_and_fresh(name):
    from dpadapt.privacy.mechanisms import NoiseSource

    call = _exported_calls()[name]
    one, two = call(NoiseSource()), call(NoiseSource())
    assert one.guarantee.valid and not np.array_equal(one.value, two.value)


def test_report_noisy_min_refuses_a_numpy_generator():
    from dpadapt.privacy import report_noisy_min

    with pytest.raises(TypeError, match="NoiseSource"):
        report_noisy_min(np.zeros(3), 1.0, 1.0, np.random.default_rng(0))


# --- item 4: a CSR row storing one column m times --------------------------------------------------------------


@pytest.mark.parametrize("fn", ["class_sums", "class_moment_sums", "moment_sums"])
def test_low_level_sums_clip_a_row_with_duplicate_stored_entries(fn):
    from dpadapt.privacy import mechanisms

    m = 100
    row = sp.csr_matrix((np.full(m, 1.0), np.zeros(m, dtype=int), [0, m]), shape=(1, 3))  # the value 100 stored as 100 ones
    assert row.has_canonical_format is False or row.nnz == m
    call = {"class_sums": lambda Z: mechanisms.class_sums(Z, np.array([0]), 2)[0],
            "class_moment_sums": lambda Z: mechanisms.class_moment_sums(Z, np.array([0]), 2)[0],
            "moment_sums": lambda Z: mechanisms.moment_sums(Z)[1]}[fn]
    total = np.asarray(call(row), dtype=float)
    assert np.linalg.norm(total) <= 1.0 + 1e-12, f"{fn}: a stored-duplicate row keeps norm {np.linalg.norm(total):.3g} after clipping"
    if fn != "class_sums":
        second = (mechanisms.class_moment_sums(row, np.array([0]), 2)[2] if fn == "class_moment_sums"
                  else mechanisms.moment_sums(row)[2])
        assert np.trace(second) <= 1.0 + 1e-12


# --- item 5: a header-less CSV given to `schema draft --header-of` ----------------------------------------------


def test_schema_draft_refuses_a_data_row_as_header(tmp_path, capsys):
    export = tmp_path / "export.csv"
    export.write_text("63,1,145,233,1\n67,1,160,286,0\n")  # no header: the first line is a patient's record
    out = tmp_path / "draft.toml"
    assert main(["schema", "draft", "--header-of", str(export), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "--columns" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


# --- item 6: a declared range whose width overflows float64 -----------------------------------------------------


@pytest.mark.parametrize("rng_, transform", [([-1e308, 1e308], None), ([-1.5e308, 1e308], None), ([0.0, 1.7e308], None)])
def test_schema_range_whose_width_overflows_is_refused(rng_, transform):
    from dpadapt.tables import SchemaError, schema_from_dict

    spec = {"name": "x", "type": "numeric", "range": rng_}
    if transform:
        spec["transform"] = transform
    with pytest.raises(SchemaError, match="range"):
        schema_from_dict({"table": {}, "columns": [spec]})


def test_schema_range_at_the_float_limit_maps_every_value_to_a_finite_feature(tmp_path):
    from dpadapt.tables import read_table, schema_from_dict

    schema = schema_from_dict({"table": {}, "columns": [{"name": "x", "type": "numeric", "range": [-4e307, 4e307]}]})
    path = tmp_path / "t.csv"
    path.write_text("x\n-4e307\n0\n4e307\n")
    X = read_table(path, schema).X
    assert np.all(np.isfinite(X)) and np.allclose(X.ravel(), [-1.0, 0.0, 1.0])


# --- item 9: discrepancy paper mode: mark each guarantee by what the code does ------------------------------------


@pytest.fixture
def bms_small(rng):
    Xs = rng.normal(size=(12, 3))
    Xt = rng.normal(size=(50, 3)) + 0.2
    return Xs, Xt


@pytest.mark.parametrize("algorithm", ["frank_wolfe", "mirror_descent"])
def test_discrepancy_paper_mode_guarantee_says_what_the_code_does(bms_small, algorithm):
    from dpadapt.discrepancy import private

    Xs, Xt = bms_small
    prob = private.make_problem(Xt, Xs, K=20, lam=1e-3, r=1.0)
    planner = private.plan_rnm_steps if algorithm == "frank_wolfe" else private.plan_gaussian_steps
    sound, paper = planner(prob, 2.0, 1e-3, "sound"), planner(prob, 2.0, 1e-3, "paper")
    # what the code does in paper mode: target rows clipped to r (same M₀), noise at least the sound scale for its ε
    g = paper.guarantee
    assert g.valid, g.report()
    assert g.epsilon <= 2.0 + 1e-9 and g.sensitivity == pytest.approx(sound.sensitivity)
    if algorithm == "frank_wolfe":
        # the printed scale equals the correct one for its per-step ε₀ (2τ*/ε₀, tight τ*, non-monotone scores)
        assert paper.sigma == pytest.approx(2.0 * prob.tau(tight=True) / paper.epsilon0)
    assert any("paper" in s for s in (g.theorem, *map(str, g.details.values())))


# --- item 8: Ctrl-C before and after the budget is reserved ----------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a subprocess")
@pytest.mark.parametrize("pause, state, words", [
    ("import", None, "before any privacy budget was reserved: nothing was charged"),
    ("after_reserve", "aborted", "before any privacy noise was drawn"),
    ("after_publish", "committed", "was charged to the source party's dataset"),
])
def test_ctrl_c_says_in_one_line_what_was_charged(tmp_path, pause, state, words):
    rng = np.random.default_rng(8)
    save_table(tmp_path / "source.npz", np.clip(rng.normal(size=(60, 4)), -1, 1), np.arange(60) % 2)
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget("source", fingerprint(tmp_path / "source.npz"), 10.0, 1e-5)
    _request(tmp_path, 4, 60, "1")
    flag = tmp_path / "paused"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(TESTS)]), DPADAPT_PLUGINS="_hooks_plugin",
               DPADAPT_LEDGER=str(ledger), DPADAPT_TEST_PAUSE_AT=pause, DPADAPT_TEST_PAUSE_FILE=str(flag))
    proc = subprocess.Popen([sys.executable, "-m", "dpadapt.cli.main", "release", "sound", "--data", str(tmp_path / "source.npz"),
                             "--request", str(tmp_path / "request.release"), "--classes", "0,1", "--epsilon", "1", "--delta", "1e-5",
                             "--out", str(tmp_path / "s.release")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # a job started in the background of a non-interactive shell inherits SIGINT ignored:
                            # the child gets the default back, as a terminal's Ctrl-C would find it
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not flag.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert flag.exists(), proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and words in lines[0], err
    entries = Ledger(ledger).history()
    assert [e.state for e in entries] == ([state] if state else [])
    if state == "committed":  # what was charged, in the one line: ε, δ, the dataset and the ledger
        g = entries[0].guarantee
        assert f"ε = {g.epsilon:.4g}" in lines[0] and f"δ = {g.delta:.3g}" in lines[0] and str(ledger) in lines[0]


# --- item 7: a forged release whose statistics no honest mechanism produces ---------------------------------------


def _forge(path_in: Path, path_out: Path, scale: float, array: str = "sums") -> None:
    from dpadapt.release import Release

    rel = Release.load(path_in)
    rel.arrays[array] = rel.arrays[array] * scale
    rel.release_id = "forged"
    rel.save(path_out)  # unsigned, with a fresh checksum: only its values can give it away


@pytest.mark.parametrize("array, scale", [("sums", 1e300), ("counts", 1e6), ("second", 1e3), ("sums", 50.0)])
def test_cli_adapt_refuses_a_forged_unsigned_release(tmp_path, monkeypatch, capsys, rng, array, scale):
    Xs = np.clip(rng.normal(size=(200, 4)), -1, 1)
    ys = np.arange(200) % 2
    save_table(tmp_path / "source.npz", Xs, ys)
    save_table(tmp_path / "target.npz", np.clip(rng.normal(size=(50, 4)), -1, 1))
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    Ledger(tmp_path / "ledger.sqlite").set_budget("source", fingerprint(tmp_path / "source.npz"), 10.0, 1e-5)
    _request(tmp_path, 4, 200, "4", rows=np.clip(rng.normal(size=(50, 4)), -1, 1))
    assert main(["release", "sound", "--request", str(tmp_path / "request.release"), "--data", str(tmp_path / "source.npz"),
                 "--classes", "0,1", "--epsilon", "4", "--delta", "1e-5", "--out", str(tmp_path / "s.release")]) == 0
    adapt = ["adapt", "sound", "--data", str(tmp_path / "target.npz"), "--own-release", str(tmp_path / "request.release"), "--out"]
    assert main([*adapt, str(tmp_path / "honest.model"), "--release", str(tmp_path / "s.release")]) == 0
    capsys.readouterr()
    _forge(tmp_path / "s.release", tmp_path / "forged.release", scale, array)
    assert main([*adapt, str(tmp_path / "forged.model"), "--release", str(tmp_path / "forged.release")]) == 1
    err = capsys.readouterr().err
    assert "cannot come from the declared mechanism" in err or "magnitude" in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "forged.model").exists()


@pytest.mark.parametrize("family", ["classstats", "prima"])
def test_receivers_refuse_class_statistics_no_mechanism_produces(family, rng):
    from dpadapt import api
    from dpadapt.release import ReleaseError

    fam = api.families()[family]
    config, data = fam.example(0)
    releases, _ = fam.run_parties(config, data)
    stats = next(r for r in releases if "sums" in r.arrays)
    if family == "classstats":
        from dpadapt import classstats

        basis = next(r for r in releases if r.kind == classstats.BASIS_KIND)
        receive = lambda rel: classstats.adapt(rel, data["Xt"], config, basis_release=basis)  # noqa: E731
    else:
        from dpadapt.alignment import prima

        receive = lambda rel: prima.adapt_class_statistics(rel, data["Xt"], config)  # noqa: E731
    receive(stats)  # the honest release is accepted
    import copy

    for array, scale in (("sums", 1e300), ("sums", 1e3), ("counts", 1e4)):
        forged = copy.deepcopy(stats)
        forged.arrays[array] = forged.arrays[array] * scale
        with pytest.raises(ReleaseError, match="declared mechanism|magnitude"):
            receive(forged)


def test_plausibility_check_accepts_honest_releases_at_the_worst_case(rng):
    """Honest releases whose exact statistics sit at the bounds (every row of norm 1 on one axis, one class holding
    every row) pass, for σ small and large, with n known or not; 1 000 draws each."""
    from dpadapt.privacy.mechanisms import NoiseSource, class_moment_statistics
    from dpadapt.validation import check_plausible_statistics

    n, k = 50, 4
    Z = np.zeros((n, k))
    Z[:, 0] = 1.0
    labels = np.zeros(n, dtype=np.int64)
    noise = NoiseSource(3, reproducible=True)
    for sigma in (1e-3, 0.5, 20.0):
        for _ in range(1000):
            st = class_moment_statistics(Z, labels, 3, sigma=sigma, relation="replace_one", noise=noise)
            for known in (n, None):
                check_plausible_statistics(st.sums, st.counts, sigma=sigma, n=known, second=st.second)
        bigger = st.sums.copy()
        bigger[0] *= 1.0 + 20.0 * (sigma * (np.sqrt(k) + 10) + 10 * sigma) / max(np.linalg.norm(bigger[0]), 1.0)
        with pytest.raises(ValueError, match="cannot come from the declared mechanism"):
            check_plausible_statistics(bigger, st.counts, sigma=sigma, n=n, second=st.second)


# --- item 3: add/remove — the release must not reveal n ------------------------------------------------------------


def _public_part(est) -> tuple:
    """What the receiver sees besides the noisy values: every Guarantee and every release's parameters."""
    rels = [getattr(est, a, None) for a in ("release_", "basis_release_", "request_")] + list(getattr(est, "releases_", []))
    return ({p: g.to_dict() for p, g in est.guarantees_.items()}, [r.params for r in rels if r is not None])


@pytest.mark.parametrize("estimator", ["DPLogisticRegression", "DPNearestClassMean", "ClassStatsDA", "SoundDA"])
@pytest.mark.parametrize("delta", [None, 1e-4])
def test_add_remove_likelihood_attack_on_n(rng, estimator, delta):
    """D (60 records) vs D′ (record 0 removed) under add/remove: the likelihood ratio of the public part of the output
    is ∞ (certainty) when it depends on n — the default δ = 1/(10 n), σ from it, n_source in the release (main:
    ε = ∞ against a claimed 1 for DP-LR; the reviewer's test on its weights gave ε ≥ 2.01). Fixed: refused on both
    (DP-LR divides by n; a default δ would be 1/(10 n)), or released with identical public parts."""
    from dpadapt import classstats, sound

    cls = {"DPLogisticRegression": classstats.DPLogisticRegression, "DPNearestClassMean": classstats.DPNearestClassMean,
           "ClassStatsDA": classstats.ClassStatsDA, "SoundDA": sound.SoundDA}[estimator]
    Xs, Xt = rng.normal(size=(60, 5)), rng.normal(size=(40, 5))
    ys = np.arange(60) % 3
    fits = []
    for X, y in ((Xs, ys), (Xs[1:], ys[1:])):
        extra = {"n_design": 60} if estimator == "SoundDA" else {}  # the receiver's public size estimate, not n
        est = cls(epsilon=1.0, delta=delta, classes=(0, 1, 2), relation="add_remove", random_state=0, **extra)
        fits.append(_released(lambda: est.fit_domains(X, y, Xt)) and _public_part(est))
    if fits[0] is False or fits[1] is False:
        assert fits == [False, False], "the refusal itself depends on n"
        return
    assert fits[0] == fits[1], "the public part of the add/remove release reveals n (likelihood ratio ∞)"


# --- found by the suite: a finite row whose norm overflows was refused (release or none revealed it) ---------------


@pytest.mark.parametrize("route", ["discrepancy", "dpda", "sparse-unit-ball"])
def test_a_finite_row_whose_norm_overflows_is_clipped_not_refused(rng, route):
    """D released and D′ (one row of huge finite values: its squared norm overflows the dtype) refused revealed the row;
    now the row is clipped (overflow-free norm) or its per-example gradient clipped to 0."""
    if route == "sparse-unit-ball":
        from dpadapt.privacy.mechanisms import class_sums

        Z = sp.csr_matrix(np.array([[1e200, 1e200, 0.0], [0.3, 0.4, 0.0]]))
        sums, _ = class_sums(Z, np.array([0, 1]), 2)
        assert np.allclose(sums, [[2**-0.5, 2**-0.5, 0.0], [0.3, 0.4, 0.0]])
        return
    if route == "discrepancy":
        from dpadapt.discrepancy import DiscrepancyRegressor as cls

        kw = dict(epsilon=1.0, delta=1e-4, K=5)
        Xs, ys, Xt = rng.normal(size=(30, 4)), rng.normal(size=30), rng.normal(size=(40, 4))
        big = 1e200
    else:
        from dpadapt.deep import DPDA as cls

        kw = dict(epsilon=8.0, delta=1e-5, noise_multiplier=2.0, epochs=1, batch_size=30, hidden=(4,), device="cpu",
                  classes=(0, 1))
        Xs, ys, Xt = rng.normal(size=(30, 4)), np.arange(30) % 2, rng.normal(size=(40, 4))
        big = 1e30  # finite in float32 (the dtype the network runs in); its gradient overflows there
    Xt_prime = Xt.copy()
    Xt_prime[0] = big
    released = [_released(lambda X=X: cls(random_state=0, **kw).fit_domains(Xs, ys, X)) for X in (Xt, Xt_prime)]
    assert released == [True, True]
