"""The console in a real browser: headless Chromium from Debian's packages, driven by
selenium through Debian's chromedriver (tools/console_browser.py), against ``stratus
serve``. Boots a server, opens /console, disables a host with the CLI, and reads both
from the page as it refreshes itself.

Without chromium, chromium-driver or selenium the tests skip and say what to install;
with ``CI`` set they fail instead (.ci/run installs them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional.cli_helpers import unavailable
from tests.functional.test_serve import Serve, host_of
from tools import console_browser


@pytest.fixture
def serve(tmp_path):
    """Start ``stratus serve`` (as test_serve.py's fixture); killed afterwards."""
    started: list[Serve] = []

    def start(*args: str) -> Serve:
        srv = Serve(tmp_path, tmp_path / "data", *args)
        started.append(srv)
        return srv.wait_ready()

    yield start
    for srv in started:
        srv.kill()


@pytest.fixture
def browser() -> Iterator[Any]:
    why = console_browser.missing()
    if why:
        unavailable(f"the console's browser test needs Chromium: {why}")
    driver = console_browser.start()
    try:
        yield driver
    finally:
        driver.quit()


def test_the_console_shows_a_server_and_a_host_disabled_while_it_is_open(serve, browser):
    srv = serve("--hosts", "2")
    [vm] = srv.boot("console-vm")
    busy = host_of(vm)
    other = next(h for h in ("compute0001", "compute0002") if h != busy)

    console_browser.open_console(browser, srv.api_url)
    row = console_browser.wait_for(lambda: console_browser.server_row(browser, "console-vm"))
    assert (row["Status"], row["Host"], row["Flavor"]) == ("ACTIVE", busy, "m1.tiny")
    before = console_browser.service_row(browser, other)
    assert (before["State"], before["Status"]) == ("up", "enabled")
    # The scheduling decision that put it there, with the host chosen.
    decision = browser.find_element("css selector",
                                    f'#decisions tr[data-server="{vm["id"]}"]')
    assert busy in decision.get_attribute("textContent")
    # ... naming the server by its name (its id is the cell's tooltip).
    who = decision.find_elements("css selector", "td")[2]
    assert (who.text, who.get_attribute("title")) == ("console-vm", vm["id"])
    # Each host's NIC bandwidth: named in words, used and usable in one unit.
    nic = browser.find_element(
        "css selector", f'.host[data-host="{busy}"] .bar[data-rc="NET_BW_EGR_KILOBIT_PER_SEC"]')
    assert nic.find_element("css selector", ".rc").text == "NIC egress"
    assert nic.find_element("css selector", ".amount").text == "0 / 10 Gbit/s"
    memory = browser.find_element(
        "css selector", f'.host[data-host="{busy}"] .bar[data-rc="MEMORY_MB"]')
    assert memory.find_element("css selector", ".amount").text == "0.5 / 64 GiB"

    srv.client("service", "disable", other, "--reason", "maintenance")
    # No reload: the page polls its data and redraws.
    after = console_browser.wait_for(
        lambda: (r := console_browser.service_row(browser, other))["Status"] != "enabled"
        and r, what="the disabled host")
    assert (after["State"], after["Status"]) == ("up", "disabled (maintenance)")
    capacity = browser.find_element("css selector", f'.host[data-host="{other}"]')
    assert "disabled: maintenance" in capacity.get_attribute("textContent")
    assert browser.find_element("id", "status").text == "live"


def test_a_member_token_is_refused_and_asked_again(serve, browser):
    srv = serve("--hosts", "1")
    console_browser.open_console(browser, srv.api_url, token="demo")
    message = console_browser.wait_for(
        lambda: browser.find_element("id", "login-error").text, what="the refusal")
    assert "Refused (403)" in message and "stratus:console:view" in message
    assert not browser.find_element("id", "main").is_displayed()
    assert "token" not in browser.current_url   # the fragment is dropped once read
