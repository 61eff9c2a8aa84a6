"""Privacy-budget ledger: RDP-composed spends, refusals, two-phase reservations and recovery."""

from __future__ import annotations

import dataclasses
import math
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.ledger import (
    BudgetExceeded,
    Ledger,
    NoBudget,
    default_path,
    fingerprint,
    grouped_event,
    total_spend,
)
from dpadapt.release import Release

DELTA = 1e-5


def gaussian_guarantee(z: float, relation: str = "add_remove", unit: str = "record", mode: str = "sound") -> Guarantee:
    return Guarantee.from_event(
        accounting.gaussian_event(z), party="source", unit=unit, relation=relation, delta=DELTA, theorem="Gaussian", mode=mode
    )


def closed_form(eps: float, delta: float) -> Guarantee:
    return Guarantee(party="source", unit="record", relation="add_remove", epsilon=eps, delta=delta, accounting="analytic_gaussian")


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    led = Ledger(tmp_path / "ledger.sqlite")
    led.set_budget("source", "ds", 10.0, DELTA)
    return led


def _spend(ledger: Ledger, g: Guarantee, rid: str, path=None) -> None:
    ledger.reserve("source", "ds", g, release_id=rid, method="m", kind="k", path=path)
    ledger.commit(rid)


def test_spends_compose_with_rdp_not_by_adding_epsilon(ledger):
    g = gaussian_guarantee(3.0)
    for i in range(10):
        _spend(ledger, g, f"r{i}")
    spent = ledger.spent("source", "ds")
    expected = accounting.epsilon(accounting.gaussian_event(3.0, 10), DELTA, "add_remove", "rdp")
    assert spent.n_releases == 10 and spent.n_pending == 0
    assert spent.epsilon == pytest.approx(expected, rel=1e-9)
    assert spent.epsilon < 0.5 * 10 * g.epsilon  # additive accounting would be far larger


def test_a_release_stated_tighter_than_rdp_fits_a_budget_of_its_own_epsilon(tmp_path):
    """An analytic-Gaussian release (ε below its RDP conversion) must fit a budget equal to its ε."""
    z = 1.0
    g = dataclasses.replace(gaussian_guarantee(z), epsilon=accounting.analytic_gaussian_epsilon(z, DELTA), accounting="analytic_gaussian")
    rdp = accounting.epsilon(accounting.gaussian_event(z), DELTA, "add_remove", "rdp")
    assert g.epsilon < rdp
    assert total_spend([g], delta=DELTA).epsilon == pytest.approx(g.epsilon)
    two = total_spend([g, g], delta=DELTA)  # Σδ = 2δ > δ: only the RDP bound applies
    assert two.epsilon == pytest.approx(accounting.epsilon(accounting.gaussian_event(z, 2), DELTA, "add_remove"))
    assert total_spend([g, g], delta=2 * DELTA).epsilon <= 2 * g.epsilon
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("source", "ds", g.epsilon, DELTA)
    led.reserve("source", "ds", g, release_id="a", method="m", kind="k", path=None)


def test_grouped_event_matches_plain_composition():
    events = [accounting.gaussian_event(2.0)] * 7 + [accounting.laplace_event(3.0)] * 2 + [accounting.gaussian_event(5.0)]
    plain = accounting.epsilon(accounting.compose(events), DELTA, "add_remove", "rdp")
    assert accounting.epsilon(grouped_event(events), DELTA, "add_remove", "rdp") == pytest.approx(plain, rel=1e-12)


def test_refusal_says_what_is_left_and_records_nothing(ledger):
    g = gaussian_guarantee(1.0)
    affordable = accounting.max_steps(lambda t: accounting.gaussian_event(1.0, t), 10.0, DELTA, "add_remove")
    assert affordable >= 2
    for i in range(affordable):
        _spend(ledger, g, f"r{i}")
    with pytest.raises(BudgetExceeded, match=r"left: about ε = \d") as info:
        ledger.reserve("source", "ds", g, release_id="over", method="m", kind="k", path=None)
    assert "No noise was drawn" in str(info.value)
    assert [e.release_id for e in ledger.history()] == [f"r{i}" for i in range(affordable)]


def test_closed_form_guarantees_use_basic_composition(ledger):
    a, b = closed_form(1.0, 1e-6), closed_form(2.0, 2e-6)
    assert total_spend([a, b]).epsilon == pytest.approx(3.0)
    assert total_spend([a, b]).delta == pytest.approx(3e-6)
    g = gaussian_guarantee(3.0)
    mixed = total_spend([a, g], delta=DELTA)
    assert mixed.epsilon == pytest.approx(1.0 + accounting.epsilon(g.events[0], DELTA - 1e-6, "add_remove"))
    assert total_spend([closed_form(1.0, DELTA), g], delta=DELTA).epsilon == math.inf  # no δ left for the events
    assert total_spend([a, b], delta=2e-6).epsilon == math.inf  # Σδ = 3e-6 exceeds the δ asked for
    ledger.set_budget("source", "tight", 100.0, 1e-6)
    with pytest.raises(BudgetExceeded):
        ledger.reserve("source", "tight", closed_form(1.0, 2e-6), release_id="x", method="m", kind="k", path=None)


def test_different_relations_are_converted_to_replace_one_not_added_as_if_the_same(ledger):
    """An add/remove Gaussian (multiplier z) is a replace-one Gaussian with multiplier z/2 (Δ_replace ≤ 2Δ_add)."""
    a, b = gaussian_guarantee(3.0, "add_remove"), gaussian_guarantee(3.0, "replace_one")
    s = total_spend([a, b], delta=DELTA)
    joint = accounting.compose([accounting.gaussian_event(1.5), accounting.gaussian_event(3.0)])
    assert s.epsilon == pytest.approx(accounting.epsilon(joint, DELTA, "replace_one"))
    assert "half the noise multiplier" in s.accounting
    separately = accounting.epsilon(a.events[0], DELTA / 2, "add_remove") + accounting.epsilon(b.events[0], DELTA / 2, "replace_one")
    assert s.epsilon > separately  # the old rule added the two relations as if they were the same


def test_no_budget_and_non_private_are_refused(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(NoBudget, match="dpadapt budget set"):
        led.reserve("source", "other", gaussian_guarantee(3.0), release_id="x", method="m", kind="k", path=None)
    led.set_budget("source", "other", 5.0, DELTA)
    with pytest.raises(BudgetExceeded, match="no privacy guarantee"):
        led.reserve("source", "other", Guarantee.non_private("source"), release_id="y", method="m", kind="k", path=None)
    assert led.history() == []


def test_invalid_guarantees_are_flagged_in_the_spend(ledger):
    _spend(ledger, gaussian_guarantee(3.0, mode="paper"), "p")
    assert any("paper mode" in r for r in ledger.spent("source", "ds").invalid)


def _reserve_as_dead(ledger: Ledger, rid: str, path, published: bool = False) -> None:
    ledger.reserve("source", "ds", gaussian_guarantee(3.0), release_id=rid, method="m", kind="k", path=path)
    if published:
        ledger.mark_published(rid)
    with sqlite3.connect(ledger.path) as con:
        con.execute("UPDATE spends SET pid = ? WHERE release_id = ?", (dead_pid(), rid))


def _release_file(path, rid: str) -> None:
    r = Release("m", "k", "source", {"a": np.zeros(2)}, gaussian_guarantee(3.0))
    r.release_id = rid
    r.save(path)


def test_stale_reservations_are_refunded_only_when_never_published(ledger, tmp_path):
    never = tmp_path / "never.release"
    leftover = tmp_path / "never.release.tmp-1"
    _reserve_as_dead(ledger, "never", never)
    with sqlite3.connect(ledger.path) as con:
        pid = con.execute("SELECT pid FROM spends WHERE release_id = 'never'").fetchone()[0]
    leftover = tmp_path / f"never.release.tmp-{pid}"
    leftover.write_bytes(b"half a release")
    written = tmp_path / "written.release"
    _reserve_as_dead(ledger, "written", written, published=True)
    _release_file(written, "written")
    moved = tmp_path / "moved.release"  # published, then the file was moved away: still charged
    _reserve_as_dead(ledger, "moved", moved, published=True)
    other = tmp_path / "other.release"  # never published; the path holds someone else's file
    _reserve_as_dead(ledger, "other", other)
    _release_file(other, "someone-else")
    _reserve_as_dead(ledger, "socket", None, published=True)
    _reserve_as_dead(ledger, "unsent", None)
    live = tmp_path / "live.release"
    ledger.reserve("source", "ds", gaussian_guarantee(3.0), release_id="live", method="m", kind="k", path=live)

    spent = ledger.spent("source", "ds")  # runs the recovery
    states = {e.release_id: e.state for e in ledger.history()}
    assert states == {"never": "aborted", "written": "committed", "moved": "committed", "other": "aborted",
                      "socket": "committed", "unsent": "aborted", "live": "reserved"}
    assert not leftover.exists()
    assert spent.n_releases == 4 and spent.n_pending == 1  # a live reservation counts as spent
    expected = accounting.epsilon(accounting.gaussian_event(3.0, 4), DELTA, "add_remove")
    assert spent.epsilon == pytest.approx(expected)


def test_reservation_context_aborts_before_write_and_commits_after(ledger, tmp_path):
    g = gaussian_guarantee(3.0)
    with pytest.raises(RuntimeError), ledger.reservation("source", "ds", g, release_id="a", method="m", kind="k", path=tmp_path / "a.release"):
        raise RuntimeError("crashed while drawing noise")
    out = tmp_path / "b.release"
    with pytest.raises(RuntimeError), ledger.reservation("source", "ds", g, release_id="b", method="m", kind="k", path=out) as r:
        r.publish()
        _release_file(out, "b")
        raise RuntimeError("crashed after writing")
    with ledger.reservation("source", "ds", g, release_id="c", method="m", kind="k", path=tmp_path / "c.release") as r:
        r.kind = "final-kind"
        r.publish()
        _release_file(tmp_path / "c.release", "c")
    entries = {e.release_id: e for e in ledger.history()}
    assert entries["a"].state == "aborted"
    assert entries["b"].state == "committed"
    assert entries["c"].state == "committed" and entries["c"].kind == "final-kind"


def test_default_path_and_fingerprint(tmp_path, monkeypatch):
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "x.sqlite"))
    assert default_path() == tmp_path / "x.sqlite"
    assert Ledger().path == tmp_path / "x.sqlite"
    f = tmp_path / "data.bin"
    f.write_bytes(b"abc")
    assert fingerprint(f) == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert os.path.exists(tmp_path / "x.sqlite")
