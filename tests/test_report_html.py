"""``dpadapt report --html``: plain words per party, data sources and counts, metrics with intervals, a band
over runs against ε, the target's own ledger; rendered in headless Chromium when one is installed."""

from __future__ import annotations

import html
import re
import shutil
import struct
import subprocess

import pytest

from dpadapt.cli.main import main
from test_hospitals import export, schema_text


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    """Two ε × two runs of the sound release (source ledger) and the target's models; the target's ledger is its own."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "schema.toml").write_text(schema_text())
    export(tmp_path / "source.csv", 400, 0, "SRC")
    export(tmp_path / "target.csv", 300, 1, "TGT", shift=3, zero_chol=20, high_chol=2)
    S = ["--schema", "schema.toml"]
    src_ledger = ["--ledger", "source-ledger.sqlite"]
    assert main(["budget", "set", "--party", "source", "--data", "source.csv", *S, "--epsilon", "20", "--delta", "1e-5",
                 *src_ledger]) == 0
    models = []
    for eps in ("1", "4"):
        assert main(["request", "--data", "target.csv", *S, "--n-source", "400", "--epsilon", eps, "--delta", "1e-5",
                     "--out", f"req{eps}.release", "--ledger", "target-ledger.sqlite"]) == 0
        for run in (1, 2):
            assert main(["release", "sound", "--request", f"req{eps}.release", "--data", "source.csv", *S, "--epsilon", eps,
                         "--delta", "1e-5", "--out", f"s{eps}-{run}.release", *src_ledger]) == 0
            assert main(["adapt", "sound", "--release", f"s{eps}-{run}.release", "--own-release", f"req{eps}.release",
                         "--data", "target.csv", *S, "--out", f"m{eps}-{run}.dpadapt", "--ledger", "target-ledger.sqlite"]) == 0
            models.append(f"m{eps}-{run}.dpadapt")
    return tmp_path, models


def test_report_page_for_the_target(sweep, capsys):
    """Was: jargon, a red "target not protected" alarm, no sources or counts, one noisy run per ε on a 2-point axis,
    and `--ledger` needed the source's ledger, which the target never has."""
    tmp, models = sweep
    capsys.readouterr()
    argv = ["report", *models, "--html", "r.html", "--ledger", "target-ledger.sqlite", "--data", "target.csv",
            "--schema", "schema.toml", "--bootstrap", "200"]
    assert main(argv) == 0
    page = (tmp / "r.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert "The source (labelled) party is protected (differential privacy)" in text
    assert "The target party is not protected in this setting" in text and "It disclosed" in text and "NOT a valid" not in page
    assert 'class="bad"' not in page and "#a00" not in page  # no alarm colour for the target
    assert "kept in the source party's own ledger, which stays with it" in text
    assert "No ledger file at target-ledger.sqlite" in text
    assert re.search(r"source \(labelled\) party\s*</td>\s*<td class=\"num\">400</td>", page)  # rows from the release
    assert re.search(r"your data.*?<td class=\"num\">300</td>", page, flags=re.S)
    assert "imputed as declared (missing cells and missing codes) in 1 of 3 columns: chol 20 (6.7 %)" in text
    assert "chol 2 (0 below 100, 2 above 600)" in text and "⚠" in text
    for words in ("balanced accuracy", "ROC-AUC", "sensitivity", "specificity", "Brier score", "calibration slope"):
        assert re.search(re.escape(words) + r"</td><td class=\"num\">\d\.\d{3}</td><td class=\"num\">\d\.\d{3} – \d\.\d{3}",
                         page), words
    # the axis names both curves drawn on it (was: ROC-AUC drawn on an axis labelled balanced accuracy)
    assert re.search(r'<img alt="balanced accuracy / ROC-AUC on your data against epsilon" src="data:image/png;base64,', page)
    # a page of several models is titled as such (was: by its first model only); the metrics say when they are in-sample
    assert f"<h1>Run report: ε sweep of {len(models)} sound models ({models[0]} … {models[-1]})</h1>" in page
    assert "In-sample when these are the rows the model was adapted on" in text
    rows = re.findall(r"<tr><td class=\"num\">(\d+)</td><td class=\"num\">(\d)</td>", page)
    assert rows == [("1", "2"), ("4", "2")]  # two runs per ε: a band, not one noisy point
    assert "One run per ε" not in text
    # issue 36: the prevalence with its interval, the rule, in-sample said plainly, calibration and a reliability diagram
    assert re.search(r"estimated prevalence of '\w+': \d+\.\d % \(90 % interval \d+\.\d–\d+\.\d %", text)
    assert "decision rule: most probable class at the target's estimated prior" in text
    assert "the scores are in-sample" in text
    assert re.search(r"At this rule: sensitivity \d+ %, specificity \d+ %.*slope -?\d\.\d\d.*error \d\.\d{3}", text)
    assert '<img id="reliability" alt="reliability diagram" src="data:image/png;base64,' in page
    assert not (tmp / "target-ledger.sqlite").exists()  # the report reads; it creates no ledger
    # the release itself is refused for --html (a model file is what a report describes)
    assert main(["report", "s1-1.release", "--html", "x.html"]) == 1 and not (tmp / "x.html").exists()
    # one run per ε is said plainly
    assert main(["report", models[0], models[2], "--html", "two.html", "--data", "target.csv", "--schema", "schema.toml",
                 "--bootstrap", "0"]) == 0
    assert "One run per ε: each run draws fresh noise" in (tmp / "two.html").read_text()


def _chromium() -> str | None:
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome", "chrome") if shutil.which(n)), None)


@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(sweep, tmp_path):
    tmp, models = sweep
    assert main(["report", *models, "--html", "r.html", "--data", "target.csv", "--schema", "schema.toml",
                 "--bootstrap", "100"]) == 0
    shot = tmp / "r.png"
    proc = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1100,3000", f"--screenshot={shot}", (tmp / "r.html").as_uri()],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-500:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1100, 3000) and len(data) > 50_000  # a page with text and a plot, not a blank
    dom = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", (tmp / "r.html").as_uri()],
                         capture_output=True, timeout=120, text=True).stdout
    for anchor in ('id="prevalence"', 'id="rule"', 'id="in-sample"', 'id="at-rule"', 'id="reliability"'):
        assert anchor in dom, anchor  # the rendered page carries the prevalence, the rule, calibration and the diagram
