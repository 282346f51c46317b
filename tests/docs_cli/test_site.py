"""The built documentation site, opened in headless Chromium.

One page per section loads with its title and no error block from an executed cell, every
internal link of those pages leads to a built file (and its ``#anchor`` exists there), and the
figures are displayed (loaded, with a non-zero natural size). Runs on the site that
``python docs/build.py`` wrote; skipped, saying why, when there is no built site, no selenium
or no Chromium with its driver (Debian: ``apt-get install chromium chromium-driver``). CI
builds the site and runs this file explicitly (``.ci/run``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest

SITE = Path(__file__).resolve().parents[2] / "docs" / "_build" / "html"
PAGES = {  # one per section of the site, with a word its title must hold
    "index.html": "pymc-partition",
    "installation.html": "Installation",
    "getting_started.html": "Getting started",
    "guides/index.html": "User guides",
    "guides/diagnostic.html": "diagnostic",
    "guides/point_estimates.html": "Point estimates",
    "gallery/index.html": "Gallery",
    "gallery/arabidopsis_convergence.html": "Arabidopsis",
    "gallery/galaxies_escobar_west.html": "Galaxies",
    "api/index.html": "API reference",
    "api/arviz_regen.html": "arviz_regen",
    "api/generated/arviz_regen.hotelling_rs.html": "hotelling_rs",
    "maths/index.html": "Mathematics",
    "performance.html": "Performance",
}
PAGES_WITH_FIGURES = [
    "index.html",
    "getting_started.html",
    "guides/diagnostic.html",
    "guides/point_estimates.html",
    "gallery/arabidopsis_convergence.html",
    "gallery/galaxies_escobar_west.html",
]


def _driver():
    if not (SITE / "index.html").is_file():
        pytest.skip(f"no built site at {SITE} (build it: python docs/build.py)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed (the docs extra)")
    browser = next(filter(None, map(shutil.which, ["chromium", "chromium-browser", "google-chrome"])), None)
    driver_bin = next(filter(None, map(shutil.which, ["chromedriver", "chromium.chromedriver"])), None)
    if browser is None or driver_bin is None:
        pytest.skip("no Chromium and chromedriver on PATH (Debian: apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    from selenium.webdriver.chrome.service import Service

    return webdriver.Chrome(service=Service(executable_path=driver_bin), options=options)


@pytest.fixture(scope="module")
def browser():
    driver = _driver()
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _open(browser, page):
    browser.get((SITE / page).as_uri())
    return browser


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_loads(browser, page):
    _open(browser, page)
    assert PAGES[page].lower() in browser.title.lower(), browser.title
    main = browser.find_element("css selector", "main, article, div.bd-article")
    assert main.text.strip(), f"{page}: empty content"
    errors = browser.find_elements("css selector", "div.output.traceback, .cell_output .output.error")
    assert not errors, f"{page}: an executed cell raised: {errors[0].text[:500]}"


def test_no_broken_internal_link(browser):
    broken, checked = [], 0
    for page in sorted(PAGES):
        _open(browser, page)
        hrefs = {a.get_attribute("href") for a in browser.find_elements("css selector", "a[href]")}
        for href in sorted(filter(None, hrefs)):
            url, fragment = urldefrag(href)
            if urlparse(url).scheme != "file":
                continue  # external links are not fetched: CI has no general network
            target = Path(unquote(urlparse(url).path))
            checked += 1
            if not target.is_file():
                broken.append(f"{page} -> {href}")
            elif fragment and target.suffix == ".html":
                html = target.read_text(errors="replace")
                if f'id="{fragment}"' not in html and f'name="{fragment}"' not in html:
                    broken.append(f"{page} -> {href} (no anchor)")
    assert checked > 50, f"only {checked} internal links found: is the navigation rendered?"
    assert not broken, "broken internal links:\n" + "\n".join(broken)


@pytest.mark.parametrize("page", PAGES_WITH_FIGURES)
def test_figures_are_displayed(browser, page):
    _open(browser, page)
    images = browser.find_elements("css selector", "main img, article img")
    assert images, f"{page}: no figure"
    sizes = [browser.execute_script("return [arguments[0].complete, arguments[0].naturalWidth]", img) for img in images]
    missing = [img.get_attribute("src") for img, (done, width) in zip(images, sizes) if not (done and width > 0)]
    assert not missing, f"{page}: figures that did not load: {missing}"
