"""The search page of ``rag serve`` in a real headless browser: Debian's ``chromium`` driven by
``chromium-driver`` through selenium. A user gives the page a reader token, types a query, reads
the results, opens one, asks a question and watches the answer stream in with clickable
citations. Skipped, saying why, where chromium or its driver is not installed
(``apt-get install -y chromium chromium-driver``; ``.ci/run`` installs them when it can).

The test saves a screenshot of the page (results and a streamed answer); with
``RAG_SAVE_SCREENSHOT=1`` it also becomes ``docs/serve.png``, which README shows.
"""

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from plugins.serve import SECRETS, Served

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver") or next(
    (p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver") if Path(p).exists()), None)
SCREENSHOT = Path(__file__).parent.parent / "docs" / "serve.png"
ANSWER = "The alpha handler returns its argument unchanged [1]."


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("needs Debian's chromium and chromium-driver: apt-get install -y chromium chromium-driver")
    selenium = pytest.importorskip("selenium", reason="needs selenium (the dev extra): make install")
    del selenium
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager: no download, no statistics
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-dev-shm-usage", "--window-size=1200,900",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=DRIVER))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(condition: Any, timeout: float = 20, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:  # not there yet (stale or missing element)
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_reader_searches_reads_and_asks_on_the_page(serve_app, fake_llm, browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    served: Served = serve_app()
    fake_llm.reply = lambda messages: ANSWER
    fake_llm.word_delay = 0.15  # the answer streams in over about a second
    page = browser
    page.get(served.url + "/")
    find = page.find_element

    # The server wants a token: the page asks for one.
    wait_for(lambda: find(By.ID, "token-form").is_displayed(), what="the token form")
    find(By.ID, "token").send_keys(SECRETS["alice"])
    find(By.CSS_SELECTOR, "#token-form button").click()
    sources = wait_for(lambda: [o.text for o in Select(find(By.ID, "source")).options][1:], what="sources")
    assert sources == ["alpha"]  # alice's token reads alpha only

    # Search: results with path:lines, the definition's name, a snippet.
    find(By.ID, "query").send_keys("secret handler")
    find(By.ID, "search-button").click()
    results = wait_for(lambda: find(By.ID, "results").find_elements(By.CSS_SELECTOR, "li.result"),
                       what="results")
    first = results[0]
    assert first.find_element(By.CSS_SELECTOR, ".where a").text == "alpha.py:1-3"
    assert first.find_element(By.CSS_SELECTOR, ".name").text == "alpha_secret_handler"
    assert "Shared words about the handler" in first.find_element(By.CSS_SELECTOR, "pre").text
    assert "beta" not in find(By.ID, "results").text
    assert find(By.ID, "message").text.startswith("1 result in")

    # The link opens the indexed text.
    first.find_element(By.CSS_SELECTOR, ".where a").click()
    text = wait_for(lambda: find(By.ID, "reader").is_displayed() and find(By.ID, "reader-text").text,
                    what="the reader")
    assert text.startswith("def alpha_secret_handler(x):")
    find(By.ID, "reader-close").click()

    # Ask: the answer streams in, then its citations, each a link.
    find(By.ID, "tab-ask").click()
    find(By.ID, "question").send_keys("what does the secret handler return?")
    find(By.ID, "ask-button").click()
    seen: set[str] = set()

    def answered() -> bool:
        seen.add(find(By.ID, "answer").text)
        return find(By.ID, "answer").text == ANSWER and bool(find(By.ID, "citations").text)

    wait_for(answered, what="the streamed answer")
    partial = {t for t in seen if t and t != ANSWER}
    assert partial and all(ANSWER.startswith(t.rstrip()) for t in partial)  # it grew piece by piece
    citation = find(By.CSS_SELECTOR, "#citations li a")
    assert citation.text == "alpha.py:1-3"
    cite = find(By.CSS_SELECTOR, "#answer a.cite")
    assert cite.text == "[1]" and cite.get_attribute("title") == "alpha.py:1-3"
    assert wait_for(lambda: find(By.ID, "message").text.startswith("answered in"), what="the summary")

    shot = tmp_path / "serve.png"
    page.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("RAG_SAVE_SCREENSHOT"):
        shutil.copyfile(shot, SCREENSHOT)

    cite.click()
    assert wait_for(lambda: find(By.ID, "reader-text").text, what="the cited text").startswith("def alpha")
