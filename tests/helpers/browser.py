"""A real headless Chromium for the tests, driven through chromedriver's W3C WebDriver
HTTP API with the standard library only (no selenium, no Playwright download).

Debian's `chromium` and `chromium-driver` packages provide both binaries
(`.ci/install-browser` installs them). Chromium starts headless, sandbox off (containers),
with a new empty profile and every background service off, so it never reaches for the
network; pages are opened from file:// URLs.

    python -m tests.helpers.browser CARD.html OUT.png [WIDTH]   # a full-page screenshot
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
                  "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1"]


def find_binaries() -> tuple[str | None, str | None]:
    chromium = os.environ.get("DPSPIN_CHROMIUM") or next(
        (p for p in (shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium") if p and
         Path(p).exists()), None)
    driver = os.environ.get("DPSPIN_CHROMEDRIVER") or next(
        (p for p in (shutil.which("chromedriver"), "/usr/bin/chromedriver") if p and Path(p).exists()), None)
    return chromium, driver


def missing_reason() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    chromium, driver = find_binaries()
    if chromium is None:
        return "chromium is not installed (apt-get install chromium chromium-driver; .ci/install-browser does it)"
    if driver is None:
        return "chromedriver is not installed (apt-get install chromium-driver; .ci/install-browser does it)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One chromedriver process and one headless Chromium session."""

    def __init__(self, width: int = 1366, height: int = 768):
        chromium, driver = find_binaries()
        reason = missing_reason()
        if reason:
            raise RuntimeError(reason)
        self.profile = tempfile.mkdtemp(prefix="dpspin-chromium-")
        self.port = _free_port()
        self.log = open(Path(self.profile) / "chromedriver.log", "wb")
        self.proc = subprocess.Popen([driver, f"--port={self.port}", "--allowed-ips=127.0.0.1"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if self._call("GET", "/status")["value"].get("ready"):
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromedriver did not start")
            time.sleep(0.1)
        caps = {"browserName": "chrome", "goog:loggingPrefs": {"browser": "ALL"},
                "goog:chromeOptions": {"binary": chromium,
                                       "args": CHROMIUM_FLAGS + [f"--user-data-dir={self.profile}/profile",
                                                                 f"--window-size={width},{height}"]}}
        try:
            self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["value"]["sessionId"]
        except Exception:
            self.close()
            raise

    # -- protocol
    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"webdriver {method} {path}: {exc.read()[:500]!r}") from None

    def _s(self, method: str, path: str, body: dict | None = None):
        return self._call(method, f"/session/{self.session}{path}", body)["value"]

    # -- what the tests use
    def open(self, path: str | Path) -> None:
        self._s("POST", "/url", {"url": Path(path).resolve().as_uri()})

    def js(self, script: str, *args):
        """Run `script` as a function body in the page; returns its JSON-able result."""
        return self._s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def console(self) -> list[dict]:
        """Browser console entries since the last call ({level, message})."""
        return self._s("POST", "/se/log", {"type": "browser"})

    def cdp(self, cmd: str, params: dict | None = None):
        return self._s("POST", "/goog/cdp/execute", {"cmd": cmd, "params": params or {}})

    def set_size(self, width: int, height: int) -> None:
        self._s("POST", "/window/rect", {"width": width, "height": height})

    def screenshot(self, out: str | Path, *, full_page: bool = True) -> Path:
        params = {"format": "png"}
        if full_page:
            w, h = self.js("return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params |= {"captureBeyondViewport": True, "clip": {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}}
        png = base64.b64decode(self.cdp("Page.captureScreenshot", params)["data"])
        Path(out).write_bytes(png)
        return Path(out)

    def pdf(self) -> bytes:
        return base64.b64decode(self.cdp("Page.printToPDF", {"printBackground": True})["data"])

    def close(self) -> None:
        try:
            if getattr(self, "session", None):
                self._call("DELETE", f"/session/{self.session}")
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


if __name__ == "__main__":
    card, png = sys.argv[1], sys.argv[2]
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 1280
    with Browser(width=width, height=800) as b:
        b.open(card)
        b.screenshot(png)
        errors = [m for m in b.console() if m.get("level") == "SEVERE"]
    print(f"wrote {png}" + (f"; console errors: {errors}" if errors else ""))
