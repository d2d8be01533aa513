"""``srez view``'s credential under attack, in a real browser (Debian's chromium through
Selenium) against the real command (docs/security.md, "The run viewer").

The attacker is an agent with the host's network (a ``cmd:`` agent on ``local`` given a model):
it listens on a loopback port of its own and lures the person watching its run into opening it,
through a link in its dialog. Whatever the browser sends that listener, the agent has. The view
must have sent it nothing that opens the view: no cookie (a browser sends a host's cookies to
every port of it), no token, no secret; and with everything it got, plus the address ``srez
view`` printed, the agent reads no run and opens no terminal.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from web_kit import HOSTILE_ID, hostile_run, real_results, wait_css, wait_until

pytestmark = pytest.mark.browser


class Listener:
    """The agent's listener: a plain HTTP server on a loopback port, recording every request's
    path and headers."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((self.path, dict(self.headers.items())))
                body = b"<!doctype html><title>runbook</title><p id=stolen>thanks</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def everything(self) -> str:
        return "\n".join(f"{path} {headers}" for path, headers in self.seen)


@pytest.fixture
def listener() -> Iterator[Listener]:
    agent = Listener()
    yield agent
    agent.server.shutdown()
    agent.server.server_close()


def _secret(browser: Any) -> str:
    return str(browser.execute_script("return localStorage.getItem('srez-view-secret')") or "")


def test_a_link_in_a_hostile_dialog_sends_the_agent_nothing_that_opens_the_view(
    browser: Any, view: Callable[..., str], tmp_path: Path, listener: Listener
) -> None:
    """The person watching opens the hostile run and clicks its link: the agent's listener gets
    the click, with no cookie, no token and no secret, under either name of the host. Today's
    cookie fails this: cookies are scoped to a host, never to a port."""

    root = tmp_path / "results"
    lure = f"http://127.0.0.1:{listener.port}/runbook"
    hostile_run(root, lure=lure)
    address = view(root)
    token = address.split("token=")[1]
    browser.get(address)
    wait_css(browser, "tr.run-row")
    secret = _secret(browser)
    base = address.split("/?")[0]
    browser.get(f"{base}/#/run/{HOSTILE_ID}")
    (link,) = wait_css(browser, f"a[href='{lure}']")
    link.click()
    wait_until(browser, lambda _: len(listener.seen) >= 1)
    for name in ("127.0.0.1", "localhost"):  # the address typed, as a person might
        browser.get(f"http://{name}:{listener.port}/typed")
    wait_until(browser, lambda _: len(listener.seen) >= 3)
    got = listener.everything()
    assert all("Cookie" not in headers for _, headers in listener.seen), got
    assert token not in got and (not secret or secret not in got)
    assert base not in got  # no Referer either: the run's address stays the view's
    assert secret and secret != token  # the page holds a secret of its own, and sent it nowhere


async def test_with_all_the_agent_got_and_the_printed_address_it_reads_no_run_and_opens_no_terminal(
    browser: Any, view: Callable[..., str], tmp_path: Path, listener: Listener
) -> None:
    """The agent replays what its listener got, against the view: no API answers it, no
    WebSocket opens, no ticket is issued to it; and the printed address, once the person's
    browser used it, trades for nothing (nor does it open anything in the browser's history)."""
    root = tmp_path / "results"
    hostile_run(root, lure=f"http://127.0.0.1:{listener.port}/runbook")
    address = view(root)
    token = address.split("token=")[1]
    base = address.split("/?")[0]
    browser.get(address)
    wait_css(browser, "tr.run-row")
    browser.get(f"http://127.0.0.1:{listener.port}/runbook")
    wait_until(browser, lambda _: len(listener.seen) >= 1)
    replayed = [
        {k: v for k, v in headers.items() if k.lower() not in ("host", "connection")}
        for _, headers in listener.seen
    ]
    async with aiohttp.ClientSession(base_url=base) as agent:
        for headers in replayed:
            headers["Origin"] = base  # and it can claim the view's own origin: no browser asks it
            for path in ("/api/runs", f"/api/runs/{HOSTILE_ID}", "/api/config"):
                async with agent.get(path, headers=headers) as r:
                    assert r.status == 401, (path, await r.text())
            for socket in ("terminal", "live"):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await agent.ws_connect(f"/api/runs/{HOSTILE_ID}/{socket}", headers=headers)
                assert refused.value.status == 401
            path = f"/api/runs/{HOSTILE_ID}/terminal"
            async with agent.post("/api/ticket", json={"path": path}, headers=headers) as r:
                assert r.status == 401
        async with agent.post("/api/session", json={"token": token}, headers={"Origin": base}) as r:
            assert r.status == 403, await r.text()  # the person's browser traded it already


def test_two_views_on_one_host_keep_their_own_sessions(
    browser: Any, view: Callable[..., str], tmp_path: Path
) -> None:
    """A second ``srez view`` on the same host does not sign the first one's page out (one
    cookie name on one host was one slot, and the second view's overwrote the first's)."""
    from selenium.webdriver.common.by import By

    first_root, second_root = tmp_path / "first", tmp_path / "second"
    real_results(first_root)
    hostile_run(second_root)
    first, second = view(first_root), view(second_root)
    browser.get(first)
    wait_css(browser, "tr.run-row", 6)
    browser.get(second)
    wait_css(browser, "tr.run-row", 1)
    for address, rows in ((first, 6), (second, 1)):
        browser.get(address.split("/?")[0] + "/#/runs")  # the address bar without the token
        wait_until(
            browser, lambda d, n=rows: len(d.find_elements(By.CSS_SELECTOR, "tr.run-row")) == n
        )
        assert browser.find_elements(By.ID, "signed-out") == []
