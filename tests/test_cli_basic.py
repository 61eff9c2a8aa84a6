"""The ``dpadapt`` command line: account, datasets, bench (run in-process)."""

from __future__ import annotations

import json
import re

import pytest

from dpadapt.cli.main import main


def _value(text: str, key: str) -> float:
    match = re.search(rf"^{key}\s+([0-9.eE+-]+)\s*$", text, re.MULTILINE)
    assert match, f"{key} not in output:\n{text}"
    return float(match.group(1))


def test_account_dpsgd_fixture(capsys):
    rc = main(["account", "--sigma", "1.1", "--sample-rate", "0.0042667", "--steps", "2343", "--delta", "1e-5"])
    out = capsys.readouterr().out
    assert rc == 0
    assert _value(out, "epsilon_rdp") == pytest.approx(1.10, abs=0.02)
    assert _value(out, "epsilon_pld") == pytest.approx(0.92, abs=0.02)


def test_account_json_and_calibration(capsys):
    assert main(["account", "--epsilon", "1.0", "--steps", "1", "--delta", "1e-5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["relation"] == "add_remove"
    # one Gaussian release: PLD recovers the analytic σ ≈ 3.73 for (1, 1e-5); RDP needs more
    assert out["sigma_pld"] == pytest.approx(3.73, abs=0.02)
    assert out["sigma_rdp"] > out["sigma_pld"]


def test_account_without_replacement(capsys):
    assert main(["account", "--sigma", "1.0", "--without-replacement", "1000", "10", "--steps", "100", "--delta", "1e-5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["relation"] == "replace_one" and "epsilon_pld" not in out
    assert 0 < out["epsilon_rdp"] < 5


def test_account_errors(capsys):
    assert main(["account", "--steps", "10", "--delta", "1e-5"]) == 1
    assert "--sigma" in capsys.readouterr().err
    assert main(["account", "--sigma", "1", "--steps", "10", "--delta", "2"]) == 1
    assert "delta" in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "account" in capsys.readouterr().out


def test_datasets_list(data_root, capsys):
    assert main(["datasets", "--root", str(data_root), "list"]) == 0
    out = capsys.readouterr().out
    assert "office_caltech10/decaf6" in out and "amazon_reviews/bow5000" in out and "mnist_usps/jda_protocol" in out
    assert re.search(r"webcam\s+295 × 4096", out)
    assert re.search(r"books\s+6465 × 5000\s+sparse CSR", out)
    assert re.search(r"mnist\s+70000 × 784", out)


def test_datasets_info(data_root, capsys):
    assert main(["datasets", "--root", str(data_root), "info", "googlenet"]) == 0
    out = capsys.readouterr().out
    assert "aliases: googlenet" in out and re.search(r"amazon\s+958 × 1024", out)
    assert main(["datasets", "info", "imagenet"]) == 1
    assert "unknown dataset" in capsys.readouterr().err


def test_bench_source_only_quick(data_root, tmp_path, capsys, monkeypatch):
    import dpadapt.baselines.source_only as source_only

    out = tmp_path / "so.json"
    # the bench command's path, not the model selection: one pair (--tasks) and a one-point grid (the default
    # cross-validates 3 scalings × 5 C on 4096 features, about a minute)
    monkeypatch.setattr(source_only, "SCALINGS", ("standard",))
    monkeypatch.setattr(source_only, "C_GRID", (1.0,))
    assert main(["bench", "source-only", "--quick", "--tasks", "D->W", "--seeds", "1", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "decaf6:D->W" in text and "decaf6:W->D" not in text
    rows = json.loads(out.read_text())
    assert {r["task"] for r in rows} == {"decaf6:D->W"}
    assert all(r["error"] is None and 0.5 < r["value"] <= 1.0 for r in rows)
    assert out.with_suffix(".csv").is_file()


def test_bench_list(capsys):
    import importlib

    import dpadapt.bench.registry as registry
    import dpadapt.cli.bench_cmd as bench_cmd

    registry.all_suites()  # discovery imports dpadapt.bench.suites (the subpackage) ...
    importlib.reload(bench_cmd)  # ... so the command must still find the function, not the module
    assert main(["bench", "--list"]) == 0
    assert "source-only" in capsys.readouterr().out


def test_account_rejects_sample_rate_above_one(capsys):
    assert main(["account", "--sigma", "1.0", "--sample-rate", "1.5", "--steps", "10", "--delta", "1e-5"]) == 1
    assert "--sample-rate must be in (0, 1]" in capsys.readouterr().err
