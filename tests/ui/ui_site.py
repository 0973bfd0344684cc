"""A browser pointed at a served store: Chromium started headless, and the page helpers
the UI tests share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from strata.builds.service import BuildService
from strata.lake.service import Lake
from strata.settings import Settings

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "ui"
READ, WRITE = "reader-token-1", "writer-token-1"
# A desktop screen and a phone's: every page must read well on both.
WIDE, NARROW = (1280, 800), (390, 844)

CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def start_chromium(profile: Path) -> WebDriver:
    """Headless Chromium with a fresh profile; fails, naming the fix, when not installed."""
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        pytest.fail(
            "Chromium is not installed: `bash scripts/test.sh` installs Debian's chromium "
            "and chromium-driver (apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROME_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    return driver


def set_viewport(driver: WebDriver, size: tuple[int, int]) -> None:
    width, height = size
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


@dataclass
class Site:
    """A served demo store and the browser pointed at it."""

    url: str
    settings: Settings
    service: BuildService
    driver: WebDriver
    shots: Path

    def lake(self) -> Lake:
        return self.service.lake

    def go(self, route: str, token: str | None = READ) -> None:
        """Open ``route`` (``#/…``) as a visitor holding ``token``, on main unless the
        route names a branch, with no namespace switched to, and wait for it."""
        self.driver.get(f"{self.url}/")
        self.driver.execute_script(
            "if (arguments[0]) sessionStorage.setItem('strata.token', arguments[0]);"
            "else sessionStorage.removeItem('strata.token');"
            "sessionStorage.removeItem('strata.branch');"
            "sessionStorage.removeItem('strata.namespace');",
            token or "",
        )
        self.driver.get(f"{self.url}/{route}")
        self.driver.refresh()  # the token is read when the page loads
        self.wait_shown(route)

    def wait_shown(self, route: str, timeout: float = 20) -> None:
        def drawn(d: WebDriver) -> bool:
            main = d.find_element("id", "main")
            return main.get_attribute("aria-busy") is None and main.get_attribute("data-shown") == (
                route or "#/"
            )

        WebDriverWait(self.driver, timeout).until(drawn)

    def wait(self, until: Callable[[WebDriver], object], timeout: float = 20) -> object:
        # A page that redraws itself replaces the elements a check holds: look again.
        redrawn = [StaleElementReferenceException]
        wait = WebDriverWait(self.driver, timeout, poll_frequency=0.1, ignored_exceptions=redrawn)
        return wait.until(until)

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def errors(self) -> list[str]:
        """What the browser logged as errors since the last call, but the API's refusals a
        test asked for (401 without a token, 403 for a read token's write)."""
        expected = ("status of 401", "status of 403")
        return [
            e["message"]
            for e in self.driver.get_log("browser")
            if e["level"] == "SEVERE" and not any(x in e["message"] for x in expected)
        ]


def css(site: Site, selector: str) -> list[WebElement]:
    return site.driver.find_elements(By.CSS_SELECTOR, selector)


def one(site: Site, selector: str) -> WebElement:
    return site.driver.find_element(By.CSS_SELECTOR, selector)


def section(site: Site, title: str) -> WebElement:
    """The ``<section>`` whose heading starts with ``title``."""
    heading = site.driver.find_element(By.XPATH, f"//main//h2[starts-with(., '{title}')]")
    return heading.find_element(By.XPATH, "./ancestor::section[1]")
