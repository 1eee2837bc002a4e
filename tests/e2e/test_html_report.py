"""The HTML report in a real browser (issue 18): `upguard demo` writes its page; headless
Chromium (Debian's `chromium`, installed by scripts/install-deps.sh) opens it. No console error,
the culprit's op and module on the page, one point in the spread plot per op of the divergent
step, and a screenshot in the test's output folder."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from conftest import TORCH2, line_of, MODEL, upguard

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: make deps"),
    # The demo trains with /usr/bin/python3 whichever torch the suite tests: once is enough.
    pytest.mark.skipif(TORCH2, reason="the demo runs Debian's torch 1.13; the torch 1.13 suite "
                                      "opens its page"),
]


def chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                           "--disable-dev-shm-usage",
                           "--no-first-run", "--enable-logging=stderr", "--v=0",
                           f"--user-data-dir={tmp_path / 'chromium-profile'}", *args],
                          capture_output=True, text=True, timeout=180)


def test_demo_page_opens_in_a_browser(tmp_path):
    demo = upguard("demo", "-o", tmp_path / "demo", timeout=600)
    assert demo.returncode == 1, demo.stderr  # the demo's runs diverge
    page = tmp_path / "demo" / "report.html"
    assert f"the report as a page (open it in a browser; it works offline): {page}" in demo.stdout
    html = page.read_text()
    assert "<script" not in html and "http://" not in html and "https://" not in html

    loaded = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    console = [line for line in loaded.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    dom = loaded.stdout
    card = dom[dom.index('id="verdict"'):dom.index("How it spread")]
    assert "aten::gelu" in card and "blocks.1.mlp.act" in card
    assert "self.act(self.fc(x))" in card  # the call site's source line
    assert f"gpt.py:{line_of(MODEL, 'h = self.act(self.fc(x))')}" in card

    # One point per op of the divergent step, the culprit among them.
    model = json.loads(upguard("diff", tmp_path / "demo" / "reference",
                               tmp_path / "demo" / "candidate", "--json", "--spread").stdout)
    spread = model["ranks"][0]["spread"]
    points = re.findall(r'<circle class="op[^"]*"', dom)
    divergent = next(row for row in spread["steps"] if row["step"] == spread["step"])
    assert len(points) == len(spread["ops"]) == divergent["ops"]
    # Across the steps: one loss point per step with a loss, the steps after it included.
    losses = [row for row in spread["steps"] if row["loss_a"] is not None]
    assert len(re.findall(r'<circle class="step-loss"', dom)) == len(losses) >= 4
    assert losses[0]["loss_a"] == losses[0]["loss_b"] and losses[-1]["loss_a"] != losses[-1]["loss_b"]
    assert len([p for p in points if "culprit" in p]) == 1
    assert spread["ops"][spread["divergent_index"]]["op"] == "aten::gelu"
    assert 'data-module="blocks.1.mlp.act"' in dom  # the module tree reaches the culprit
    assert "ULP distances" in dom  # the element view of --explain's captures
    # Where gelu's output differs: nearly everywhere (99% of its elements), so most cells drawn.
    cells = re.findall(r'<rect class="diff-cell"', dom)
    assert len(cells) > 0.9 * 48 * 96

    shot = tmp_path / "demo-report.png"
    taken = chromium(tmp_path, "--hide-scrollbars", "--window-size=1280,3000",
                     f"--screenshot={shot}", page.as_uri())
    assert taken.returncode == 0 and shot.stat().st_size > 50_000, taken.stderr[-2000:]
    print(f"screenshot: {shot}")
