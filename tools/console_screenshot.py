"""Take docs/img/console.png: ``stratus serve`` on a scratch data directory, a few
servers (one resized, one batch too big to fit), a host disabled, then the console in
headless Chromium (tools/console_browser.py).

    .venv/bin/python tools/console_screenshot.py [--out docs/img/console.png]

Needs Debian's chromium and chromium-driver, and selenium (the ``test`` extra).
Everything runs on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools import console_browser

BIN = Path(sys.executable).parent
READY = "Ctrl-C stops it."


def start_serve(data_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    out = open(log, "wb")   # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(
        [str(BIN / "stratus"), "serve", "--data-dir", str(data_dir), "--hosts", "4",
         "--cells", "2", "--port", "0", "--api-port", "0", "--network-port", "0",
         "--identity-port", "0", "--image-port", "0"],
        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True)
    deadline = time.monotonic() + 120
    while READY not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            sys.exit(f"stratus serve did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.1)
    urls = {}
    for line in log.read_text().splitlines():
        for label, var in (("Placement API:", "STRATUS_PLACEMENT_URL"),
                           ("Compute API:", "STRATUS_API_URL"),
                           ("Network API:", "STRATUS_NETWORK_URL")):
            if line.startswith(label):
                urls[var] = line.split()[-1].removesuffix("/v2.1").rstrip("/")
    return proc, urls


def stratus(env: dict[str, str], *args: str, check: bool = True) -> None:
    result = subprocess.run([str(BIN / "stratus"), *args], env=env, capture_output=True,
                            text=True, timeout=300)
    if check and result.returncode != 0:
        sys.exit(f"stratus {' '.join(args)}: {result.stderr.strip()}")


def populate(env: dict[str, str]) -> None:
    stratus(env, "server", "create", "web", "--flavor", "m1.small", "--count", "6", "--wait")
    stratus(env, "server", "create", "db", "--flavor", "m1.large", "--count", "2", "--wait")
    stratus(env, "server", "create", "cache", "--flavor", "m1.medium", "--wait")
    stratus(env, "server", "resize", "web-1", "--flavor", "m1.medium", "--wait")
    stratus(env, "service", "disable", "compute0004", "--reason", "maintenance")
    # Too big for what is left: the console shows why, as the conductor recorded it.
    stratus(env, "server", "create", "batch", "--flavor", "m1.xlarge", "--count", "8",
            "--wait", check=False)


def shoot(api_url: str, out: Path, width: int, height: int) -> None:
    driver = console_browser.start(width, height)
    try:
        console_browser.open_console(driver, api_url)
        console_browser.wait_for(lambda: console_browser.service_row(driver, "compute0004")
                                 .get("Status", "").startswith("disabled"))
        time.sleep(0.5)   # let the last redraw settle
        out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(out))
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/img/console.png"))
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=1500)
    args = parser.parse_args()
    why = console_browser.missing()
    if why:
        sys.exit(f"cannot take the screenshot: {why}")
    with tempfile.TemporaryDirectory(prefix="stratus-console-") as tmp:
        proc, urls = start_serve(Path(tmp) / "data", Path(tmp) / "serve.log")
        try:
            env = {**os.environ, **urls}
            populate(env)
            shoot(urls["STRATUS_API_URL"], args.out, args.width, args.height)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
