"""Accounting fixtures (spec 00 § "Reproduction fixtures") and the accountant's helpers."""

from __future__ import annotations

import json
import math

import dp_accounting
import pytest

from dpadapt.privacy import accounting as A

DPOT_DELTA = 1.0 / (1.2 * 4365)


# --- fixtures re-derived in the spec ----------------------------------------------------------


@pytest.mark.parametrize("eps, expected", [(4, 1.253), (5, 1.041), (10, 0.609)])
def test_dpot_paper_noise_ratio(eps, expected):
    # the spec rounds to 3 decimals (ε=5 gives 1.0415…, printed 1.041 / paper 1.04)
    assert A.dpot_paper_noise_ratio(eps, DPOT_DELTA) == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("eps, expected", [(4, 1.218), (5, 1.015), (10, 0.598)])
def test_kkmm_ratio(eps, expected):
    assert A.kkmm_sigma(eps, DPOT_DELTA) == pytest.approx(expected, abs=1e-3)
    assert A.kkmm_sigma(eps, DPOT_DELTA, sensitivity=3.0) == pytest.approx(3 * A.kkmm_sigma(eps, DPOT_DELTA))
    # KKMM (ln(1/(2δ))) is slightly below the paper's printed formula (ln(1/δ))
    assert A.kkmm_sigma(eps, DPOT_DELTA) < A.dpot_paper_noise_ratio(eps, DPOT_DELTA)


@pytest.mark.parametrize("epochs, expected", [(24, 0.96), (94, 2.0), (353, 4.2)])
def test_dpda_tifs_poisson_rdp(epochs, expected):
    n, batch = 397, 32
    steps = round(epochs * n / batch)
    eps = A.epsilon(A.poisson_gaussian_event(6.0, batch / n, steps), 1e-5, "add_remove", "rdp")
    assert eps == pytest.approx(expected, abs=0.05)


def test_dpsgd_mnist_rdp_and_pld():
    event = A.poisson_gaussian_event(1.1, 256 / 60000, 2343)
    eps_rdp = A.epsilon(event, 1e-5, "add_remove", "rdp")
    eps_pld = A.epsilon(event, 1e-5, "add_remove", "pld")
    assert eps_rdp == pytest.approx(1.10, abs=0.02)
    assert eps_pld == pytest.approx(0.92, abs=0.02)
    assert A.resolve_method(event, "add_remove", "auto") == "pld"
    assert A.epsilon(event, 1e-5, "add_remove", "auto") == pytest.approx(eps_pld)


@pytest.mark.parametrize("steps, expected", [(200, 2.5), (600, 4.2), (1200, 6.1)])
def test_dpot_minibatch_poisson_rdp(steps, expected):
    eps = A.epsilon(A.poisson_gaussian_event(1.0, 128 / 4365, steps), DPOT_DELTA, "add_remove", "rdp")
    assert eps == pytest.approx(expected, abs=0.05)


# --- the accountant's behaviour ----------------------------------------------------------------


def test_epsilon_monotone_in_steps_and_noise():
    e = lambda z, t: A.epsilon(A.poisson_gaussian_event(z, 0.01, t), 1e-5)  # noqa: E731
    assert e(1.0, 100) < e(1.0, 1000) < e(1.0, 10000)
    assert e(2.0, 1000) < e(1.0, 1000)


def test_replace_one_sampling_without_replacement():
    # WBK19 bound: subsampling helps, and B = n reduces to the plain Gaussian
    sub = A.sampled_without_replacement_gaussian_event(1.0, 1000, 10, 100)
    full = A.sampled_without_replacement_gaussian_event(1.0, 1000, 1000, 100)
    assert isinstance(full, dp_accounting.SelfComposedDpEvent)
    assert isinstance(full.event, dp_accounting.GaussianDpEvent)
    e_sub = A.epsilon(sub, 1e-5, "replace_one", "rdp")
    e_full = A.epsilon(full, 1e-5, "replace_one", "rdp")
    assert 0 < e_sub < e_full
    # PLD refuses the sampled event under replace_one; auto falls back to RDP
    with pytest.raises(ValueError, match="PLD"):
        A.epsilon(sub, 1e-5, "replace_one", "pld")
    assert A.resolve_method(sub, "replace_one", "auto") == "rdp"
    with pytest.raises(ValueError):
        A.sampled_without_replacement_gaussian_event(1.0, 10, 11, 1)


def test_single_gaussian_rdp_close_to_analytic():
    sigma = A.analytic_gaussian_sigma(1.0, 1e-5)
    assert A.analytic_gaussian_epsilon(sigma, 1e-5) == pytest.approx(1.0, abs=1e-3)
    # PLD of one Gaussian is (nearly) exact; RDP is an upper bound
    pld_eps = A.epsilon(A.gaussian_event(sigma), 1e-5, "add_remove", "pld")
    rdp_eps = A.epsilon(A.gaussian_event(sigma), 1e-5, "add_remove", "rdp")
    assert pld_eps == pytest.approx(1.0, abs=0.01)
    assert rdp_eps >= pld_eps - 1e-6
    # analytic is much tighter than the classic bound for small ε
    assert A.analytic_gaussian_sigma(0.5, 1e-5) < A.classic_gaussian_sigma(0.5, 1e-5)
    with pytest.raises(ValueError, match="ε < 1"):
        A.classic_gaussian_sigma(2.0, 1e-5)


def test_laplace_event_is_pure():
    # Laplace with b = Δ/ε: pure ε-DP, so at any δ the accountant must not report more than ε
    eps = A.epsilon(A.laplace_event(1.0 / 0.5), 1e-6, "replace_one", "pld")
    assert eps <= 0.5 + 1e-3
    assert eps > 0.4


def test_randomized_response_event_epsilon():
    # RR keeping the label w.p. e^ε/(e^ε+k−1) is ε-DP. Its RDP is ≤ ε at every order, so the
    # RDP→(ε, δ) conversion reports at most ε + ln(1/δ)/(α_max − 1) (α_max = largest order used).
    slack = lambda d: math.log(1 / d) / (max(A.RDP_ORDERS) - 1)  # noqa: E731
    for eps0, k in ((1.0, 2), (1.0, 10), (3.0, 4)):
        event = A.randomized_response_event(eps0, k)
        p = event.noise_parameter
        keep = 1 - p + p / k
        assert keep == pytest.approx(math.exp(eps0) / (math.exp(eps0) + k - 1))
        for delta in (1e-9, 1e-5):
            got = A.epsilon(event, delta, "replace_one", "rdp")
            assert eps0 - 0.01 <= got <= eps0 + slack(delta)
    # a label-flip RR with more noise (smaller ε) is accounted as more private
    assert A.epsilon(A.randomized_response_event(0.5, 10), 1e-5, "replace_one") < 0.52


def test_calibrate_noise_multiplier_inverts_epsilon():
    make = lambda z: A.poisson_gaussian_event(z, 0.01, 300)  # noqa: E731
    z = A.calibrate_noise_multiplier(make, 1.0, 1e-5, "add_remove", "rdp")
    assert A.epsilon(make(z), 1e-5) <= 1.0 + 1e-9
    assert A.epsilon(make(z), 1e-5) == pytest.approx(1.0, abs=0.01)
    assert A.epsilon(make(0.98 * z), 1e-5) > 1.0  # smallest: a bit less noise breaks the budget
    # PLD on one Gaussian release is (nearly) exact: it recovers the analytic-Gaussian σ
    z_pld = A.calibrate_noise_multiplier(A.gaussian_event, 1.0, 1e-5, "add_remove", "pld")
    assert z_pld == pytest.approx(A.analytic_gaussian_sigma(1.0, 1e-5), rel=0.01)
    assert z_pld < A.calibrate_noise_multiplier(A.gaussian_event, 1.0, 1e-5, "add_remove", "rdp")


@pytest.mark.parametrize("n, eps, expected", [(157, 20.0, 27), (295, 20.0, 72)])
def test_max_steps_dpot_budgets(n, eps, expected):
    # spec 00: multiplier 1.1, B = 128, δ = 1/(1.2 n), paper budgets → DSLR ≈ 27, Webcam ≈ 72 steps
    make = lambda t: A.poisson_gaussian_event(1.1, 128 / n, t)  # noqa: E731
    delta = 1 / (1.2 * n)
    t = A.max_steps(make, eps, delta)
    assert abs(t - expected) <= 2
    # maximal: t is within budget, t + 1 is not
    assert A.epsilon(make(t), delta) <= eps
    assert A.epsilon(make(t + 1), delta) > eps


def test_max_steps_zero_when_one_step_is_over_budget():
    assert A.max_steps(lambda t: A.gaussian_event(0.1, t), 1.0, 1e-5) == 0


def test_advanced_composition_formula():
    eps0, delta0, k, dp = 0.1, 1e-6, 100, 1e-5
    eps, delta = A.advanced_composition(eps0, delta0, k, dp)
    assert eps == pytest.approx(eps0 * math.sqrt(2 * k * math.log(1 / dp)) + k * eps0 * (math.exp(eps0) - 1))
    assert delta == pytest.approx(k * delta0 + dp)
    assert eps < k * eps0  # beats basic composition for many small steps


def test_input_validation():
    event = A.gaussian_event(1.0)
    with pytest.raises(ValueError, match="delta"):
        A.epsilon(event, 0.0)
    with pytest.raises(ValueError, match="delta"):
        A.epsilon(event, 1.5)
    with pytest.raises(ValueError, match="relation"):
        A.epsilon(event, 1e-5, relation="swap")
    with pytest.raises(ValueError, match="method"):
        A.epsilon(event, 1e-5, method="moments")
    with pytest.raises(ValueError, match="sample_rate"):
        A.poisson_gaussian_event(1.0, 0.0, 10)
    with pytest.raises(ValueError, match="epsilon"):
        A.analytic_gaussian_sigma(0.0, 1e-5)
    assert A.epsilon(A.compose([]), 1e-5) == 0.0


@pytest.mark.parametrize(
    "event",
    [
        A.gaussian_event(1.3, 5),
        A.laplace_event(2.0),
        A.randomized_response_event(1.0, 10),
        A.poisson_gaussian_event(1.1, 0.01, 50),
        A.sampled_without_replacement_gaussian_event(1.0, 100, 10, 7),
        A.compose([A.gaussian_event(2.0), A.laplace_event(3.0, 2)]),
    ],
)
def test_event_to_dict_round_trip(event):
    data = A.event_to_dict(event)
    back = A.event_from_dict(json.loads(json.dumps(data)))
    assert back == event
    relation = "replace_one" if "Random" in json.dumps(data) or "WithoutReplacement" in json.dumps(data) else "add_remove"
    assert A.epsilon(back, 1e-5, relation) == pytest.approx(A.epsilon(event, 1e-5, relation))


def test_event_from_dict_rejects_unknown_type():
    with pytest.raises(ValueError, match="unknown"):
        A.event_from_dict({"type": "MadeUpDpEvent"})


@pytest.mark.parametrize("q,steps,eps", [(1.0, 1, 1.0), (0.01, 10_000, 1.0)])
def test_two_stage_calibration_matches_all_orders_and_is_valid(q, steps, eps):
    """Issue 20: σ is calibrated on a coarse order set, then on a window of orders; it must be valid
    under the full accountant and equal the all-orders calibration to its tolerance."""
    from dpadapt.privacy.accounting import RDP_ORDERS, _calibrate

    make = lambda z: A.poisson_gaussian_event(z, q, steps)  # noqa: E731
    z = A.calibrate_noise_multiplier(make, eps, 1e-5)
    reference = _calibrate(make, eps, 1e-5, "add_remove", "rdp", 1e-4, RDP_ORDERS, 1.0)
    assert A.epsilon(make(z), 1e-5) <= eps
    assert z == pytest.approx(reference, rel=1e-3)


# --- Poisson subsampling under replace-one (issue 27 item 3: the DP-SGD routes) ----------------------------


def _replace_one_pld(event, delta=1e-5):
    acc = dp_accounting.pld.PLDAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
                                          value_discretization_interval=A.PLD_INTERVAL)
    acc.compose(event)
    return acc.get_epsilon(delta)


def test_replace_one_poisson_is_dp_accountings_replace_one_pld_and_costs_more():
    """σ/C of a Poisson-subsampled Gaussian means the same under both relations; replace-one is dp-accounting's
    REPLACE_ONE PLD (RDP has none), larger than add/remove at the same σ — the price of stating n public."""
    event = A.poisson_gaussian_event(1.0, 0.01, 1000)
    assert A.resolve_method(event, "replace_one", "rdp") == "pld"
    eps = A.epsilon(event, 1e-5, "replace_one")
    assert eps == pytest.approx(_replace_one_pld(event), rel=1e-12)
    assert eps == pytest.approx(2.84, abs=0.01)
    assert eps > 1.5 * A.epsilon(event, 1e-5, "add_remove", "pld")  # 1.83
    # a plain Gaussian composed with it keeps σ/Δ_replace: handed to REPLACE_ONE PLD (a ±1 shift) with 2σ/Δ_replace,
    # so alone it gives the add/remove PLD of σ/Δ_replace, as every replace-one Gaussian here
    small = A.poisson_gaussian_event(1.0, 0.05, 20)
    assert A.epsilon(A.compose([small, A.gaussian_event(3.0)]), 1e-5, "replace_one") == pytest.approx(
        _replace_one_pld(A.compose([small, A.gaussian_event(6.0)])), rel=1e-12)
    assert _replace_one_pld(A.gaussian_event(6.0)) == pytest.approx(A.epsilon(A.gaussian_event(3.0), 1e-5, "replace_one", "pld"))


def test_replace_one_poisson_calibration_is_valid_at_the_stated_accountant():
    make = lambda z: A.poisson_gaussian_event(z, 0.05, 200)  # noqa: E731
    z = A.calibrate_noise_multiplier(make, 2.0, 1e-5, "replace_one", "pld")
    assert _replace_one_pld(make(z)) <= 2.0
    assert _replace_one_pld(make(0.99 * z)) > 2.0  # smallest, to about the last search stage's tolerance
    assert z > A.calibrate_noise_multiplier(make, 2.0, 1e-5, "add_remove", "pld")


def test_replace_one_poisson_max_steps():
    make = lambda t: A.poisson_gaussian_event(2.0, 0.1, t)  # noqa: E731
    t = A.max_steps(make, 2.0, 1e-5, "replace_one", "pld", upper=500)
    assert 0 < t < 500
    assert A.epsilon(make(t), 1e-5, "replace_one") <= 2.0
    assert A.epsilon(make(t + 1), 1e-5, "replace_one") > 2.0 - 1e-3  # maximal up to the search discretisation
    assert t < A.max_steps(make, 2.0, 1e-5, "add_remove", "pld", upper=500)
