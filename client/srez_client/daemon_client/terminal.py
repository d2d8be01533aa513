"""An interactive shell in a run over ``/api/pty`` (``srez runs exec --tty``).

The local terminal is put in raw mode; keystrokes go to the daemon as binary frames, output comes
back as binary frames and is written as it is (this is a terminal the user asked for, like
``docker exec -it``), and a window resize sends ``{"resize": [cols, rows]}``. The terminal's mode
is restored however the session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import sys
import termios
import tty
from collections.abc import Sequence

import aiohttp

from srez_client.daemon_client.api import DaemonClient, pty_resize


async def pty_session(client: DaemonClient, command: Sequence[str] = ()) -> int:
    """Run a shell in the run until it exits or the connection closes.

    Args:
        client: The run's daemon.
        command: Typed as ``exec <command>`` first, so the session ends with it.

    Returns:
        0 (the shell's status is not reported by the pty route).
    """
    cols, rows = shutil.get_terminal_size()
    ws = await client.pty(cols, rows)
    loop = asyncio.get_running_loop()
    stdin = sys.stdin.fileno()
    saved = termios.tcgetattr(stdin)
    keys: asyncio.Queue[bytes] = asyncio.Queue()

    def on_key() -> None:
        try:
            data = os.read(stdin, 4096)
        except OSError:
            data = b""
        keys.put_nowait(data)

    def on_resize() -> None:
        size = shutil.get_terminal_size()
        keys.put_nowait(b"\0resize" + f"{size.columns},{size.lines}".encode())

    async def send_keys() -> None:
        if command:
            await ws.send_bytes(f"exec {shlex.join(command)}\n".encode())
        while data := await keys.get():
            if data.startswith(b"\0resize"):
                c, r = data[len(b"\0resize") :].split(b",")
                await ws.send_str(pty_resize(int(c), int(r)))
            else:
                await ws.send_bytes(data)
        await ws.close()

    try:
        tty.setraw(stdin)
        loop.add_reader(stdin, on_key)
        loop.add_signal_handler(signal.SIGWINCH, on_resize)
        sender = asyncio.ensure_future(send_keys())
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.BINARY:
                os.write(sys.stdout.fileno(), msg.data)
            elif msg.type in (aiohttp.WSMsgType.ERROR, aiohttp.WSMsgType.CLOSE):
                break
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender
    finally:
        loop.remove_reader(stdin)
        loop.remove_signal_handler(signal.SIGWINCH)
        termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        await ws.close()
    return 0
