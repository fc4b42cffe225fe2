"""Reports, charts, HTML in headless Chromium, compare, ladders and adaptive rounds."""

import base64
import json
import re
import shutil
import subprocess

import pytest

import perflab
from conftest import PERFLAB, run_cli, write_plan
from perflab.analysis.verdicts import judge
from perflab.lab import Lab

CONFIGS = """
[server]
key_buffer_size = "16M"
[configs.base]
query_cache_type = "OFF"
[configs.qc]
query_cache_type = "ON"
query_cache_size = "8M"
"""
CHROMIUM = shutil.which("chromium")


@pytest.fixture(scope="module")
def labs(session_root, tmp_path_factory, seed_lab):
    """The same 2-configuration plan run in two labs (as on two hosts), both at once: these
    tests read the reports' shape, not their figures (each lab holds the catalog and dataset
    already: seed_lab)."""
    plan = write_plan(tmp_path_factory.mktemp("plans") / "r.toml", "reported", configs=CONFIGS,
                      threads=(1, 2), rounds=3, run_seconds=1)
    found = [Lab(seed_lab(session_root / name, plan)) for name in ("lab-a", "lab-b")]
    runs = [subprocess.Popen([*PERFLAB, "run", str(plan), "--lab", str(lab.root)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for lab in found]
    try:
        for proc in runs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
    finally:
        for proc in runs:  # a failed or timed-out run stops its servers on SIGTERM
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=60)
    return found


def test_text_report_has_verdicts_statistics_and_flags_section(labs):
    out = run_cli("report", str(labs[0].root))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "In relative numbers:" in text and "(qc/base)" in text
    assert "Change vs base (paired by round; intervals keep a 5% error rate over all 2 " \
        "comparisons)" in text
    assert text.splitlines()[0].startswith("qc vs base: ")  # the headline comes first
    assert "Decided " in text.splitlines()[1]
    verdicts = text.split("Change vs base (paired by round", 1)[1].split("\n\n", 1)[0]
    rows = [line.split() for line in verdicts.splitlines()
            if re.match(r"qc\s+[12]\s+3\s+[+-]", line)]
    assert len(rows) == 2
    # the server's CPU per query, a second response with its own verdicts
    assert "Server CPU per query: change vs base" in text
    # each row says what the statistics decided for its cell, no other word
    assert {int(row[1]): row[6] for row in rows} == _verdicts(labs[0])
    assert "Queries per second over rounds" in text


def _verdicts(lab: Lab) -> dict[int, str]:
    """qc's verdict against base per thread count, as the statistics give it."""
    study = perflab.load_study(lab.root)
    return {threads: v.verdict for (config, threads), v in
            judge(study.plan, study.points, study.design).verdicts.items() if config == "qc"}


def test_json_report_carries_statistics_for_every_cell(labs):
    document = json.loads(run_cli("report", str(labs[0].root), "--format", "json").stdout)
    summaries = document["analysis"]["qps"]
    assert {(s["config"], s["threads"]) for s in summaries} == {
        ("base", 1), ("base", 2), ("qc", 1), ("qc", 2)}
    for s in summaries:
        assert s["n"] == 3 and s["ci95"][0] <= s["mean"] <= s["ci95"][1]
    verdicts = document["analysis"]["vs_baseline"]
    assert len(verdicts) == 2
    for v in verdicts:
        low, high = v["interval"]
        assert v["rounds"] == 3 and low <= v["change"] <= high
    assert {v["threads"]: v["verdict"] for v in verdicts} == _verdicts(labs[0])
    assert document["analysis"]["headline"][0].startswith("qc vs base: ")


@pytest.mark.parametrize(("fmt", "marker"), [("md", "| Threads |"), ("csv", "Threads,1,2")])
def test_markdown_and_csv(labs, fmt, marker):
    out = run_cli("report", str(labs[0].root), "--format", fmt)
    assert out.returncode == 0 and marker in out.stdout


def test_charts_are_written_as_png_and_svg(labs, tmp_path):
    out = run_cli("report", str(labs[0].root), "--charts", str(tmp_path), "--series", "qc:2:1")
    assert out.returncode == 0, out.stderr
    for name in ("throughput", "latency", "relative", "series"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (tmp_path / f"{name}.svg").read_text()[:500]
    bad = run_cli("report", str(labs[0].root), "--charts", str(tmp_path), "--series", "qc:99")
    assert bad.returncode == 2 and "no such successful point" in bad.stderr


def chromium(url: str) -> tuple[str, list[str]]:
    """The DOM Chromium builds for url, and the console messages it logged."""
    out = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--enable-logging=stderr", "--v=0", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=False,
    )
    console = [line for line in out.stderr.splitlines() if "CONSOLE" in line]
    return out.stdout, console


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_html_report_opens_in_headless_chromium_without_console_errors(labs, tmp_path):
    page = tmp_path / "report.html"
    out = run_cli("report", str(labs[0].root), "--html", str(page))
    assert out.returncode == 0, out.stderr
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # nothing to fetch
    dom, console = chromium(page.as_uri())
    assert console == []
    assert dom.count("<table>") >= 5
    assert "Change vs base" in dom and "Environment" in dom and "Plan" in dom
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', dom)
    assert len(images) >= 3
    assert base64.b64decode(images[0])[:8] == b"\x89PNG\r\n\x1a\n"
    # the console check itself can fail: a page that logs an error is caught
    noisy = tmp_path / "noisy.html"
    noisy.write_text("<html><body><script>console.error('boom')</script></body></html>")
    assert any("boom" in line for line in chromium(noisy.as_uri())[1])


def test_compare_two_labs_gives_a_table_with_verdicts(labs):
    out = run_cli("compare", str(labs[0].root), str(labs[1].root))
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()
            if line.startswith(("base ", "qc "))]
    assert len(rows) == 4
    assert {(r[0], r[2]) for r in rows} == {("base", "1"), ("base", "2"), ("qc", "1"), ("qc", "2")}
    table = perflab.compare(labs[0].root, labs[1].root)  # the verdicts the API gives
    assert [r[-1] for r in rows] == [row[-1] for row in table.rows]
    assert "B vs A" in out.stdout
    assert "within ±5%" in table.note  # lab A's plan's run.margin, unless one is given
    assert "within ±20%" in perflab.compare(labs[0].root, labs[1].root, margin=0.2).note
    dead = run_cli("compare", str(labs[0].root), str(labs[1].root), "--cv-threshold", "0.2")
    assert dead.returncode == 2 and "--cv-threshold" in dead.stderr  # compare flags nothing


def test_ladder_applies_steps_cumulatively_and_reports_the_progression(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "ladder.toml", "ladder", configs="""
[[steps]]
name = "start"
[[steps]]
name = "bigger key buffer"
key_buffer_size = "64M"
[[steps]]
name = "query cache"
query_cache_type = "ON"
query_cache_size = "16M"
""", threads=(2,), rounds=1, run_seconds=1)
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 0, out.stderr
    assert "Ladder at 2 thread(s)" in out.stdout
    lines = out.stdout.splitlines()
    row = next(line for line in lines if "query_cache_type=ON, query_cache_size=16M" in line)
    assert row.startswith("query cache ")
    assert re.search(r"-?\d+(\.\d)?%\s+-?\d+(\.\d)?%$", row)  # vs previous, vs start
    document = json.loads(run_cli("report", str(shared_lab.root), "--study", "ladder",
                                  "--format", "json").stdout)
    last = [s for s in document["server_states"] if s["config"] == "query cache"][-1]
    assert last["variables"]["key_buffer_size"] == str(64 << 20)  # the earlier step stays
    assert last["variables"]["query_cache_type"] == "ON"
