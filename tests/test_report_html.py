"""``dpadapt report --html``: plain words per party, data sources and counts, metrics with intervals, a band
over runs against ε, the target's own ledger; rendered in headless Chromium when one is installed."""

from __future__ import annotations

import html
import html.parser
import json
import re
import shutil
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


#: The page's decision section: its element ids (``dpadapt.cli.report_html._decision_section``).
DECISION_IDS = ("prevalence", "rule", "in-sample", "at-rule", "reliability")


def _chromium() -> str | None:
    names = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "chrome")
    return next((shutil.which(n) for n in names if shutil.which(n)), None)


@pytest.fixture(scope="module")
def one_report(tmp_path_factory):
    """One DPOT model adapted with ``--decision balanced`` and its HTML report on the target's labelled rows (fast)."""
    tmp_path = tmp_path_factory.mktemp("one_report")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
        _one_report(tmp_path)
    return tmp_path / "r.html"


def _one_report(tmp_path) -> None:
    (tmp_path / "schema.toml").write_text(schema_text())
    export(tmp_path / "source.csv", 200, 0, "SRC")
    export(tmp_path / "target.csv", 150, 1, "TGT", shift=3)
    S = ["--schema", "schema.toml"]
    assert main(["budget", "set", "--party", "source", "--data", "source.csv", *S, "--epsilon", "4", "--delta", "1e-5"]) == 0
    assert main(["request", "--data", "target.csv", *S, "--n-source", "200", "--epsilon", "1", "--delta", "1e-5",
                 "--design", "prototypes", "--out", "q.release"]) == 0
    assert main(["release", "dpot", "--data", "source.csv", *S, "--request", "q.release", "--epsilon", "1", "--delta", "1e-5",
                 "--out", "s.release"]) == 0
    assert main(["adapt", "dpot", "--release", "s.release", "--own-release", "q.release", "--data", "target.csv", *S, "--out", "m.dpadapt",
                 "--decision", "balanced"]) == 0
    assert main(["report", "m.dpadapt", "--html", "r.html", "--data", "target.csv", *S, "--bootstrap", "0"]) == 0


def _check_decision_section(found: dict) -> None:
    """What a reader must see: the prevalence with its interval, the rule, in-sample said, sensitivity / specificity,
    calibration slope and ECE at the estimated prevalence, and a reliability diagram."""
    assert set(found) == set(DECISION_IDS) and all(found[i] is not None for i in DECISION_IDS), found
    assert re.fullmatch(r"estimated prevalence of 'disease': \d+\.\d % \(90 % interval (\d+\.\d)–(\d+\.\d) %; mean; "
                        r"source prior \d+\.\d %\) — estimated on your rows without their labels \(interval: a bootstrap of "
                        r"your rows\)\.", found["prevalence"]["text"])
    assert found["rule"]["text"].startswith("decision rule: balanced (likelihood ratio > 1); flags P(positive) ≥ 0.")
    assert "the scores are in-sample" in found["in-sample"]["text"]
    assert re.fullmatch(r"At this rule: sensitivity \d+ %, specificity \d+ %, balanced accuracy \d+\.\d %\. Calibration at "
                        r"the estimated prevalence: slope -?\d+\.\d\d \(1 is calibrated; below 1 over-confident\), expected "
                        r"calibration error 0\.\d{3}\.", found["at-rule"]["text"])


@pytest.fixture(scope="module")
def sound_report(tmp_path_factory):
    """A sound model calibrated by the second release (``adapt sound --score-request`` → the source answers it → ``adapt``
    with both) and its HTML report on the target's labelled rows."""
    tmp_path = tmp_path_factory.mktemp("sound_report")
    S = ["--schema", "schema.toml"]
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
        (tmp_path / "schema.toml").write_text(schema_text())
        export(tmp_path / "source.csv", 400, 0, "SRC")
        export(tmp_path / "target.csv", 300, 1, "TGT", shift=3)
        src = ["--data", "source.csv", *S, "--delta", "1e-5"]
        assert main(["budget", "set", "--party", "source", "--data", "source.csv", *S, "--epsilon", "8", "--delta", "1e-5"]) == 0
        assert main(["request", "--data", "target.csv", *S, "--n-source", "400", "--epsilon", "4", "--delta", "1e-5",
                     "--out", "q.release"]) == 0
        assert main(["release", "sound", "--request", "q.release", *src, "--epsilon", "4", "--out", "s.release"]) == 0
        assert main(["adapt", "sound", "--release", "s.release", "--own-release", "q.release", "--data", "target.csv", *S,
                     "--out", "m0.dpadapt", "--score-request", "sr.release"]) == 0
        assert main(["release", "sound", "--request", "sr.release", *src, "--epsilon", "2", "--out", "h.release"]) == 0
        assert main(["adapt", "sound", "--release", "s.release", "--release", "h.release", "--own-release", "q.release",
                     "--own-release", "sr.release", "--data", "target.csv", *S, "--out", "m.dpadapt"]) == 0
        assert main(["report", "m.dpadapt", "--html", "r.html", "--data", "target.csv", *S, "--bootstrap", "0"]) == 0
    return tmp_path / "r.html"


#: The second release's prevalence line: its interval resamples the released counts with their public σ.
RELEASE_PREVALENCE = (r"estimated prevalence of 'disease': \d+\.\d % \(90 % interval \d+\.\d–\d+\.\d %; gated: (?:em|mean) \(score release\); "
                      r"source prior \d+\.\d %\) — from the second release at adapt, on the rows it was adapted on \(interval: "
                      r"resamples of the released counts with their public σ and of the receiver's rows; public σ = \d[\d.]*\)")


def test_score_and_report_give_the_second_release_interval(sound_report, monkeypatch, capsys):
    """A model calibrated by the second release: ``score`` and the page give both intervals, each saying which it is;
    a model without a second release gives only the bootstrap one."""
    parser = _Elements(DECISION_IDS + ("release-prevalence",))
    parser.feed(sound_report.read_text())
    assert "(interval: a bootstrap of your rows)" in parser.found["prevalence"]["text"]
    assert re.fullmatch(RELEASE_PREVALENCE + r"\.", parser.found["release-prevalence"]["text"])
    monkeypatch.chdir(sound_report.parent)
    capsys.readouterr()
    for model, second in (("m.dpadapt", True), ("m0.dpadapt", False)):
        assert main(["score", "--model", model, "--data", "target.csv", "--schema", "schema.toml", "--bootstrap", "0"]) == 0
        out = capsys.readouterr().out
        assert "estimated on these rows without their labels (interval: a bootstrap of these rows)" in out
        assert bool(re.search(RELEASE_PREVALENCE, out)) == second, out


class _Elements(html.parser.HTMLParser):
    """The text (and an image's source) of the elements ``ids`` (default :data:`DECISION_IDS`) in a page, without a browser."""

    def __init__(self, ids=DECISION_IDS):
        super().__init__()
        self.found: dict = dict.fromkeys(ids)
        self._open: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") in self.found:
            self.found[a["id"]] = {"text": "", "src": a.get("src", "")}
            self._open = a["id"] if tag != "img" else None

    def handle_endtag(self, tag):
        self._open = None

    def handle_data(self, data):
        if self._open:
            self.found[self._open]["text"] += data


def test_report_decision_section_in_the_html(one_report):
    parser = _Elements()
    parser.feed(one_report.read_text())
    _check_decision_section(parser.found)
    assert parser.found["reliability"]["src"].startswith("data:image/png;base64,")


#: Appended to a copy of the page: after load, the rendered text, box and visibility of each element and whether
#: the reliability diagram decoded, as JSON in ``<pre id="probe">`` (read back with ``--dump-dom``).
PROBE = """<pre id="probe"></pre><script>
addEventListener('load', () => {
  const out = {};
  for (const id of %s) {
    const el = document.getElementById(id);
    if (!el) { out[id] = null; continue; }
    const box = el.getBoundingClientRect(), style = getComputedStyle(el);
    out[id] = {text: el.innerText, width: box.width, height: box.height,
               visible: style.visibility === 'visible' && style.display !== 'none', natural: el.naturalWidth ?? null};
  }
  document.getElementById('probe').textContent = JSON.stringify(out);
});
</script>"""


def _rendered(page, ids) -> dict:
    """The elements ``ids`` of ``page`` as headless Chromium lays them out (:data:`PROBE`)."""
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE % json.dumps(list(ids)) + "</body>"))
    proc = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                           "--dump-dom", probe.as_uri()], capture_output=True, timeout=60, text=True)
    dumped = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, flags=re.S)
    assert proc.returncode == 0 and dumped and dumped.group(1), proc.stderr[-500:]
    return json.loads(html.unescape(dumped.group(1)))


@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium installed (apt-get install chromium-headless-shell)")
def test_report_renders_in_headless_chromium(one_report, sound_report):
    """The decision section as Chromium lays it out: every element visible with a box, its rendered text, and the
    reliability diagram decoded (naturalWidth > 0); the second release's interval visible on a model calibrated by it."""
    second = _rendered(sound_report, ("release-prevalence",))["release-prevalence"]
    assert second["visible"] and second["width"] > 100 and re.fullmatch(RELEASE_PREVALENCE + r"\.", second["text"]), second
    found = _rendered(one_report, DECISION_IDS)
    _check_decision_section(found)
    for i in DECISION_IDS:
        assert found[i]["visible"] and found[i]["width"] > 100 and found[i]["height"] > 10, (i, found[i])
    assert found["reliability"]["natural"] > 100 and found["reliability"]["height"] > 100  # the diagram decoded and drawn


def test_prevalence_estimator_is_chosen_recorded_and_overridden(one_report, monkeypatch, capsys):
    """``--prevalence``: ``adapt`` records the estimator in the model file, ``score`` re-fits with the recorded one
    and a flag on ``score`` overrides it (the estimator is named in the prevalence line)."""
    monkeypatch.chdir(one_report.parent)
    monkeypatch.setenv("DPADAPT_LEDGER", str(one_report.parent / "ledger.sqlite"))
    S = ["--schema", "schema.toml"]
    assert main(["adapt", "dpot", "--release", "s.release", "--own-release", "q.release", "--data", "target.csv", *S, "--out", "m_src.dpadapt",
                 "--prevalence", "source"]) == 0
    assert "%; source; source prior" in capsys.readouterr().out

    def score(model: str, *extra: str) -> str:
        assert main(["score", "--model", model, "--data", "target.csv", *S, "--bootstrap", "0", *extra]) == 0
        return capsys.readouterr().out

    assert "%; mean; source prior" in score("m.dpadapt")  # the default, recorded at adapt
    assert "%; source; source prior" in score("m_src.dpadapt")  # the recorded estimator
    assert "%; em; source prior" in score("m_src.dpadapt", "--prevalence", "em")  # the flag wins
