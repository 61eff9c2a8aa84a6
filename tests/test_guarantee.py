"""The Guarantee record: construction rules, composition, serialisation, report."""

from __future__ import annotations

import dataclasses

import json
import math

import pytest

from dpadapt.privacy import accounting as A
from dpadapt.privacy import Guarantee, compose_guarantees, gaussian_mechanism, laplace_mechanism


def _gauss(eps=1.0, delta=1e-5, party="target", relation="replace_one"):
    import numpy as np

    from dpadapt.privacy.mechanisms import NoiseSource

    return gaussian_mechanism(np.zeros(3), 1.0, eps, delta, NoiseSource(), party=party, relation=relation).guarantee


def test_from_event_uses_the_accountant():
    event = A.poisson_gaussian_event(1.1, 256 / 60000, 2343)
    g = Guarantee.from_event(event, party="target", unit="record", relation="add_remove", delta=1e-5, theorem="DP-SGD", method="pld")
    assert g.valid and g.mode == "sound" and not g.reasons
    assert g.epsilon == pytest.approx(A.epsilon(event, 1e-5, "add_remove", "pld"))
    assert g.accounting == "pld"
    g_auto = Guarantee.from_event(event, party="target", unit="record", relation="add_remove", delta=1e-5, theorem="", method="auto")
    assert g_auto.accounting == "pld"


def test_paper_mode_is_invalid_with_reasons():
    event = A.gaussian_event(2.0)
    g = Guarantee.from_event(event, party="source", unit="attribute", relation="replace_one", delta=1e-5, theorem="JL", mode="paper")
    assert not g.valid
    assert any("paper" in r for r in g.reasons)
    g2 = Guarantee.from_event(
        event, party="source", unit="record", relation="replace_one", delta=1e-5, theorem="x", reasons=("rows not clipped",)
    )
    assert not g2.valid and g2.reasons == ("rows not clipped",)
    with pytest.raises(ValueError, match="paper-mode"):
        Guarantee(party="source", unit="record", relation="replace_one", epsilon=1.0, delta=1e-5, mode="paper", valid=True)
    with pytest.raises(ValueError, match="reason"):
        Guarantee(party="source", unit="record", relation="replace_one", epsilon=1.0, delta=1e-5, valid=False)


@pytest.mark.parametrize(
    "field, value",
    [("party", "both"), ("unit", "row"), ("relation", "swap"), ("mode", "loose"), ("epsilon", -1.0), ("delta", 2.0)],
)
def test_constructor_rejects_bad_fields(field, value):
    kwargs = dict(party="source", unit="record", relation="replace_one", epsilon=1.0, delta=1e-5)
    kwargs[field] = value
    with pytest.raises(ValueError, match=field):
        Guarantee(**kwargs)


def test_rdp_recomposition_beats_basic_sum():
    g = _gauss(1.0, 1e-5)
    composed = g.compose(*[g] * 9)  # 10 releases
    assert composed.accounting == "rdp"
    assert composed.delta == pytest.approx(1e-4)
    assert composed.epsilon < 10 * g.epsilon / 2  # far below the basic sum 10
    assert composed.epsilon == pytest.approx(A.epsilon(A.gaussian_event(g.details["sigma"], 10), 1e-4, "replace_one"))
    assert composed.details["composed_of"] == 10
    assert composed.valid


def test_composition_never_worse_than_basic_sum():
    # a single pure-DP part plus a Gaussian part: the reported ε is at most the sum of the parts
    from dpadapt.privacy.mechanisms import NoiseSource

    lap = laplace_mechanism([1.0], 1.0, 0.1, NoiseSource(), party="target").guarantee
    g = _gauss(0.5, 1e-6)
    composed = compose_guarantees([lap, g])
    assert composed.epsilon <= lap.epsilon + g.epsilon + 1e-12
    assert composed.delta == pytest.approx(1e-6)


def test_composition_without_events_is_basic():
    a = Guarantee(party="target", unit="record", relation="add_remove", epsilon=1.0, delta=1e-6, accounting="kkmm")
    b = Guarantee(party="target", unit="record", relation="add_remove", epsilon=0.5, delta=2e-6, accounting="kkmm")
    c = a.compose(b)
    assert c.accounting == "basic_composition"
    assert c.epsilon == pytest.approx(1.5) and c.delta == pytest.approx(3e-6)


def test_composition_propagates_invalidity_and_paper_mode():
    sound = _gauss()
    paper = Guarantee.from_event(A.gaussian_event(3.0), party="target", unit="record", relation="replace_one", delta=1e-5, theorem="t", mode="paper")
    c = sound.compose(paper)
    assert c.mode == "paper" and not c.valid and c.reasons == paper.reasons


def test_composition_requires_one_party_and_comparable_units():
    with pytest.raises(ValueError, match="one party"):
        _gauss(party="target").compose(_gauss(party="source"))
    label = dataclasses.replace(_gauss(), unit="label")
    attribute = dataclasses.replace(_gauss(), unit="attribute")
    with pytest.raises(ValueError, match="no common kind of neighbour"):
        label.compose(attribute)
    assert _gauss().compose(label).unit == "label"  # record-level neighbours include label-level ones
    with pytest.raises(ValueError, match="nothing"):
        compose_guarantees([])


def test_mixed_relations_are_converted_to_replace_one_and_say_so():
    mixed = _gauss(relation="replace_one").compose(_gauss(relation="add_remove"))
    assert mixed.relation == "replace_one"
    assert any("half the noise multiplier" in c for c in mixed.details["conversions"])
    with pytest.raises(ValueError, match="cannot be read as an add/remove"):
        compose_guarantees([_gauss(relation="replace_one")], relation="add_remove")


def test_serialisation_round_trip():
    event = A.compose([A.poisson_gaussian_event(1.0, 0.01, 100), A.laplace_event(2.0)])
    g = Guarantee.from_event(
        event, party="target", unit="record", relation="add_remove", delta=1e-6, theorem="Thm 1",
        sensitivity=2.0, details={"clip": 1.0, "steps": 100},
    )
    back = Guarantee.from_dict(json.loads(g.to_json()))
    assert back == g
    assert back.epsilon == pytest.approx(A.epsilon(back.event, 1e-6, "add_remove"))
    inf = Guarantee.non_private("source")
    back_inf = Guarantee.from_dict(json.loads(json.dumps(inf.to_dict())))
    assert math.isinf(back_inf.epsilon) and not back_inf.valid
    with pytest.raises(ValueError, match="unknown Guarantee fields"):
        Guarantee.from_dict({**g.to_dict(), "colour": "red"})


def test_report_mentions_party_unit_relation():
    g = _gauss(party="source", relation="replace_one")
    text = g.report()
    assert "source" in text and "one whole record" in text and "replacing one record" in text
    assert "valid differential-privacy guarantee" in text and "Balle" in text
    att = Guarantee.from_event(A.gaussian_event(1.0), party="target", unit="attribute", relation="add_remove", delta=1e-5, theorem="JL", mode="paper")
    text = att.report()
    assert "one attribute" in text and "adding or removing" in text and "NOT a valid" in text and "paper mode" in text
    assert "∞" in Guarantee.non_private("target").report()
    assert "NOT a valid" in Guarantee.non_private("target").summary()
    assert str(g) == g.summary() and "source" in g.summary()


def test_to_json_accepts_numpy_details():
    import numpy as np

    g = Guarantee(
        party="source", unit="record", relation="add_remove", epsilon=1.0, delta=1e-5,
        details={"sigma": np.float32(2.5), "steps": np.int64(3), "norms": np.arange(2)},
    )
    data = json.loads(g.to_json())
    assert data["details"] == {"sigma": 2.5, "steps": 3, "norms": [0, 1]}


def test_check_delta_refuses_delta_above_one_over_n_in_sound_mode_and_warns_otherwise():
    import warnings

    from dpadapt.validation import PrivacyWarning, check_delta

    with pytest.raises(ValueError, match="1/n"):
        check_delta(0.01, n=100, sound=True)
    with pytest.warns(PrivacyWarning):
        check_delta(0.01, n=100)  # callers that do not say: the old warning
    with pytest.warns(PrivacyWarning):
        check_delta(0.01, n=100, sound=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_delta(1e-4, n=1000, sound=True) == 1e-4
