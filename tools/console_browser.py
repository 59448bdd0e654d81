"""Headless Chromium on the operators' console, driven by selenium through Debian's
chromedriver: shared by the console test (tests/functional/test_console_browser.py) and
the screenshot tool (tools/console_screenshot.py).

Debian's packages, not a downloaded browser: ``apt-get install chromium
chromium-driver`` gives ``/usr/bin/chromium`` and ``/usr/bin/chromedriver``, and
selenium is pointed at both, so selenium's own driver manager never goes looking on
the network. The browser only ever loads the 127.0.0.1 URL it is given; the page
fetches nothing from elsewhere (its CSP forbids it).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL_HINT = "apt-get install -y chromium chromium-driver"


def _found(paths: tuple[str, ...]) -> str | None:
    return next((p for p in paths if os.access(p, os.X_OK)), None)


def missing() -> str | None:
    """Why the browser cannot run here (one line), or None if it can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if _found(CHROMIUM) is None and shutil.which("chromium") is None:
        return f"Debian's chromium is not installed ({INSTALL_HINT})"
    if not os.access(CHROMEDRIVER, os.X_OK):
        return f"Debian's chromedriver is not installed ({INSTALL_HINT})"
    return None


def start(width: int = 1400, height: int = 1000) -> Any:
    """A headless Chromium (a selenium WebDriver); the caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    # Both paths are given, so selenium-manager has nothing to find; should it run anyway,
    # it must not report usage statistics over the network.
    os.environ.setdefault("SE_AVOID_STATS", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = _found(CHROMIUM) or str(shutil.which("chromium"))
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", f"--window-size={width},{height}",
                # Nothing but the console: no update checks, sync, metrics or DNS prefetch.
                "--disable-background-networking", "--disable-component-update",
                "--disable-default-apps", "--disable-sync", "--no-first-run",
                "--metrics-recording-only", "--disable-domain-reliability"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))


def open_console(driver: Any, api_url: str, token: str = "admin") -> None:
    """Load ``api_url``/console with ``token`` in the fragment (never sent to the server)."""
    driver.get(f"{api_url.rstrip('/')}/console#token={token}")


def wait_for(probe: Callable[[], T | None], timeout: float = 30.0,
             what: str = "the console") -> T:
    """Poll ``probe`` until it returns something truthy (the page refreshes every 2 s)."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            got = probe()
        except Exception as exc:   # the page redrew the element under us: try again
            last_error = exc
        else:
            if got:
                return got
        time.sleep(0.25)
    raise TimeoutError(f"{what} did not show what was expected within {timeout}s"
                       + (f" (last error: {last_error})" if last_error else ""))


def service_row(driver: Any, host: str, binary: str = "stratus-compute") -> dict[str, str]:
    """The services table's row for ``host``: column name -> text ({} if absent)."""
    return _row(driver, "services", f'tr[data-host="{host}"][data-binary="{binary}"]')


def server_row(driver: Any, name: str) -> dict[str, str]:
    return _row(driver, "servers", f'tr[data-name="{name}"]')


def _row(driver: Any, table: str, selector: str) -> dict[str, str]:
    from selenium.webdriver.common.by import By

    def text(element: Any) -> str:   # all of it, whether scrolled into view or not
        return str(element.get_attribute("textContent") or "").strip()

    heads = [text(th) for th in driver.find_elements(By.CSS_SELECTOR, f"#{table} thead th")]
    rows = driver.find_elements(By.CSS_SELECTOR, f"#{table} tbody {selector}")
    if not rows:
        return {}
    cells = [text(td) for td in rows[0].find_elements(By.TAG_NAME, "td")]
    return dict(zip(heads, cells, strict=False))
