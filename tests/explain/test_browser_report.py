"""A generated report opened in headless Chromium: shading as computed by the browser, and no script runs.

Needs Debian's ``chromium`` and ``chromium-driver`` (``make install`` installs them where it runs as root on a
system with apt-get); skipped with that reason when they are absent. Selenium is handed the driver's path, so
Selenium Manager never runs and nothing is downloaded.
"""

import io
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from attnkit.explain.colours import colour_of
from attnkit.explain.html import write_report
from attnkit.explain.sections import alignment_section, han_section, pooling_section

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1200,1000",
]

pytestmark = pytest.mark.skipif(
    not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)),
    reason=f"headless Chromium not installed: needs {CHROMIUM} and {CHROMEDRIVER} "
    "(Debian packages chromium and chromium-driver; `make install` installs them when run as root with apt-get)",
)

SCRIPT = "<script>window.__pwned = 1; document.title = 'pwned';</script>"
IMAGE = '<img src="x" onerror="window.__pwned = 2">'
TITLE = f"Fine food {SCRIPT}"
SENTENCES = [["Great", "coffee", SCRIPT, "beans"], ["Would", "buy", "again"]]
WORD_WEIGHTS = [[0.1, 0.6, 0.05, 0.25], [0.2, 0.5, 0.3]]
SENTENCE_WEIGHTS = [0.75, 0.25]
POOL_TOKENS = ["a", "tasty", IMAGE, "snack"]
POOL_WEIGHTS = [[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]]


def expected_shading() -> list[tuple[str, str, float, tuple[int, int, int]]]:
    """(class, text, weight, background rgb) for every shaded element, in document order."""
    expected = []
    sentence_top = max(SENTENCE_WEIGHTS)
    product_top = max(x * s for weights, s in zip(WORD_WEIGHTS, SENTENCE_WEIGHTS, strict=True) for x in weights)
    for words, weights, sentence_weight in zip(SENTENCES, WORD_WEIGHTS, SENTENCE_WEIGHTS, strict=True):
        colour = colour_of(sentence_weight / sentence_top)
        expected.append(("attn-sentence", f"{sentence_weight:.2f}", sentence_weight, colour))
        expected += [  # HAN words: word x sentence weight against the document's largest product
            ("attn-token", w, x, colour_of(x * sentence_weight / product_top))
            for w, x in zip(words, weights, strict=True)
        ]
    for weights in POOL_WEIGHTS:
        expected += [
            ("attn-token", t, x, colour_of(x / max(weights))) for t, x in zip(POOL_TOKENS, weights, strict=True)
        ]
    return expected


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    han = han_section(
        SENTENCES,
        [torch.tensor(w) for w in WORD_WEIGHTS],
        torch.tensor(SENTENCE_WEIGHTS),
        label_names=["negative", f"positive {SCRIPT}"],
        probabilities=torch.tensor([0.1, 0.9]),
    )
    pooled = pooling_section(POOL_TOKENS, torch.tensor(POOL_WEIGHTS), title=f"Pooling {IMAGE}")
    alignment = alignment_section(torch.tensor([[0.8, 0.2], [0.3, 0.7]]), ["le", "chat"], ["the", "cat"])
    return write_report(tmp_path_factory.mktemp("report") / "report.html", [han, pooled, alignment], title=TITLE)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (dev extra)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(15)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def page(browser, report):
    browser.get(report.as_uri())
    return browser


def parse_rgba(css: str) -> tuple[tuple[int, int, int], float]:
    match = re.fullmatch(r"rgba?\((\d+), (\d+), (\d+)(?:, ([0-9.e-]+))?\)", css)
    assert match, css
    red, green, blue, alpha = match.groups()
    return (int(red), int(green), int(blue)), 1.0 if alpha is None else float(alpha)


def test_highlighted_elements_have_the_intensities_the_weights_imply(page):
    found = page.execute_script(
        """
        return Array.from(document.querySelectorAll('.attn-sentence, .attn-token')).map(el => [
            el.classList.contains('attn-sentence') ? 'attn-sentence' : 'attn-token',
            el.textContent, el.dataset.weight, getComputedStyle(el).backgroundColor]);
        """
    )
    expected = expected_shading()
    assert len(found) == len(expected)
    for (css_class, text, weight, colour), (got_class, got_text, got_weight, got_css) in zip(
        expected, found, strict=True
    ):
        assert (got_class, got_text) == (css_class, text)
        assert float(got_weight) == pytest.approx(weight, rel=1e-5)
        assert parse_rgba(got_css) == (colour, 1.0), (text, got_css)  # opaque: the colour map's own colour


def test_script_in_the_input_is_shown_as_text_and_does_not_run(page):
    assert page.execute_script("return window.__pwned === undefined")
    assert page.execute_script("return document.querySelectorAll('script').length") == 0
    assert page.title == TITLE  # the title shows the script as text, and the script did not rename the page
    images = page.execute_script("return Array.from(document.images).map(i => [i.src.slice(0, 22), i.naturalWidth])")
    assert images == [["data:image/png;base64,", images[0][1]]] and images[0][1] > 0  # only the inlined heatmap
    tokens = page.execute_script("return Array.from(document.querySelectorAll('.attn-token')).map(e => e.textContent)")
    assert SCRIPT in tokens and IMAGE in tokens
    visible = page.find_element("tag name", "body").text
    assert SCRIPT in visible and IMAGE in visible


def test_screenshot_shows_the_shading(page, tmp_path):
    from PIL import Image

    path = tmp_path / "report.png"
    assert page.save_screenshot(str(path))
    png = path.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert pixels.std() > 10 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, "blank screenshot"

    scale = page.execute_script("return window.devicePixelRatio")
    for selector in (".attn-sentence", ".attn-words .attn-token:nth-child(2)"):
        # The most-attended sentence and word ("coffee"): the colour map's darkest colour, on screen.
        rect = page.execute_script(
            "const r = document.querySelector(arguments[0]).getBoundingClientRect(); return [r.left, r.top, r.height];",
            selector,
        )
        x, y = int((rect[0] + 1.5) * scale), int((rect[1] + rect[2] / 2) * scale)
        assert np.abs(pixels[y, x] - colour_of(1.0)).max() <= 3, (selector, pixels[y, x].tolist(), colour_of(1.0))
