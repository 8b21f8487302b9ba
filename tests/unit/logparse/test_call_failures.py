"""A utility call the engine answers with a failure while serving (``Invocation of X method failed``: sleep
mode's ``wake_up``, ``load_lora_adapter``, ``collective_rpc``) is one call's failure, like a rejected
request: the verdict is failed only if nothing after it shows the server going on."""

from __future__ import annotations

import re

import pytest

from orchestrator.logparse import analyze_bytes

ENGINE = "(EngineCore pid=9120) ERROR 11-30 10:41:07 [core.py:1012] "
SERVING = """\
(APIServer pid=9001) INFO 11-30 10:40:01 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000
(APIServer pid=9001) INFO:     Application startup complete.
(APIServer pid=9001) INFO:     127.0.0.1:50112 - "POST /v1/completions HTTP/1.1" 200 OK
"""
ENGINE_SIDE = "".join(ENGINE + line + "\r\n" for line in [
    "Invocation of load_lora_adapter method failed",
    "Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 1002, in _invoke_utility_method',
    "    result = method(*self._convert_msgspec_args(method, args))",
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/lora/worker_manager.py", line 95, in _load_adapter',
    "    raise ValueError(",
]) + ENGINE + "ValueError: LoRA rank 64 is greater than max_lora_rank 16.\n"
FAILED_CALL = ENGINE_SIDE + """\
(APIServer pid=9001) ERROR 11-30 10:41:07 [serving_models.py:210] Call to load_lora_adapter method failed: LoRA rank 64 is greater than max_lora_rank 16.
(APIServer pid=9001) INFO:     127.0.0.1:50114 - "POST /v1/load_lora_adapter HTTP/1.1" 400 Bad Request
"""
GOES_ON = """\
(APIServer pid=9001) INFO:     127.0.0.1:50116 - "POST /v1/completions HTTP/1.1" 200 OK
(APIServer pid=9001) INFO 11-30 10:41:20 [loggers.py:123] Engine 000: Avg prompt throughput: 12.0 tokens/s, Avg generation throughput: 40.1 tokens/s, Running: 0 reqs
"""
STOPS = """\
(APIServer pid=9001) INFO 11-30 10:45:00 [launcher.py:110] Shutting down FastAPI HTTP server.
(APIServer pid=9001) INFO:     Shutting down
(APIServer pid=9001) INFO:     Application shutdown complete.
"""


def _as(text: str, endings: str) -> bytes:
    return (re.sub(r"\r\n?", "\n", text) if endings == "plain" else text).encode()


@pytest.mark.parametrize("endings", ["stored", "plain"])
def test_a_failed_call_while_serving_is_not_a_failure_when_the_server_goes_on(endings: str) -> None:
    a = analyze_bytes(_as(SERVING + FAILED_CALL + GOES_ON + STOPS, endings))
    assert not a.failed and a.phase.value == "stopped"
    assert a.first_error is not None and a.first_error.process == "EngineCore"  # still shown as an error
    assert a.first_error.message == "Invocation of load_lora_adapter method failed"


@pytest.mark.parametrize("endings", ["stored", "plain"])
def test_a_failed_call_that_nothing_follows_is_the_cause_offered(endings: str) -> None:
    """The engine logged the failure and the log ends: the server never answered (a 4xx answer would show it
    going on).  Its traceback, not the line announcing it, is the cause offered should the process be dead."""
    a = analyze_bytes(_as(SERVING + ENGINE_SIDE, endings))
    assert not a.failed and a.phase.value == "running"  # not failed *so far*: the exit status will say
    assert a.root_cause is not None and a.root_cause.process == "EngineCore"
    assert a.root_cause.exception == "ValueError" and "max_lora_rank 16" in a.root_cause.message


@pytest.mark.parametrize("endings", ["stored", "plain"])
def test_the_same_record_during_start_up_is_a_failure(endings: str) -> None:
    """Before the server serves, a utility call that fails (``collective_rpc`` at init) is the start-up's."""
    start = "(APIServer pid=9001) INFO 11-30 10:40:01 [api_server.py:1880] vLLM API server version 0.21.0\n"
    a = analyze_bytes(_as(start + FAILED_CALL + GOES_ON.splitlines(keepends=True)[0] + STOPS, endings))
    assert a.failed and a.root_cause is not None and a.root_cause.process == "EngineCore"
    assert a.root_cause.exception == "ValueError"
