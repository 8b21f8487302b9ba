"""Exceptions that are how something else showed, not what went wrong (found by the blind set wild115,
session 31): a task's cancellation that a timeout turned into ``TimeoutError``, and a client's refused
connection to a server that was not listening.  Every text here is written for the test, in the forms the real
logs showed."""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.events import message_shown

TIMEOUT = (
    "Traceback (most recent call last):\n"
    '  File "/env/vllm/engine/async_llm_engine.py", line 604, in run_engine_loop\n'
    "    done, _ = await asyncio.wait(\n"
    '  File "/usr/lib/python3.10/asyncio/tasks.py", line 491, in _wait\n'
    "    await waiter\n"
    "asyncio.exceptions.CancelledError\n"
    "\n"
    "During handling of the above exception, another exception occurred:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/env/vllm/engine/async_llm_engine.py", line 603, in run_engine_loop\n'
    "    async with asyncio_timeout(ENGINE_ITERATION_TIMEOUT_S):\n"
    '  File "/env/vllm/engine/async_timeout.py", line 178, in _do_exit\n'
    "    raise asyncio.TimeoutError\n"
    "asyncio.exceptions.TimeoutError\n"
)


def test_a_cancellation_a_timeout_turned_into_timeouterror_is_the_timeout_not_a_stop() -> None:
    a = analyze_bytes(TIMEOUT.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "asyncio.exceptions.TimeoutError"
    assert message_shown(rc.to_dict()) == (
        "(raised without a message, at async_timeout.py:178, in _do_exit: raise asyncio.TimeoutError)")


def test_a_cancellation_alone_is_still_a_stop() -> None:
    """The same cancellation with nothing chained after it: the task was told to stop."""
    a = analyze_bytes(TIMEOUT.split("\nDuring handling")[0].encode() + b"\n")
    assert not a.failed


REFUSED = (
    "[2024-07-30 08:12:40 TP0] Memory pool end. avail mem=2.31 GB\n"
    "Initialization failed. warmup error: HTTPConnectionPool(host='0.0.0.0', port=30000): Max retries exceeded with "
    "url: /generate (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f65>: Failed to "
    "establish a new connection: [Errno 111] Connection refused'))\n"
    "Traceback (most recent call last):\n"
    '  File "/env/urllib3/connection.py", line 196, in _new_conn\n'
    "    sock = connection.create_connection(\n"
    "ConnectionRefusedError: [Errno 111] Connection refused\n"
    "Traceback (most recent call last):\n"
    '  File "/env/sglang/srt/server.py", line 445, in launch_server\n'
    "    uvicorn.run(\n"
    '  File "/env/uvicorn/config.py", line 402, in configure_logging\n'
    "    log_level = LOG_LEVELS[self.log_level]\n"
    "KeyError: 'INFO'\n"
)


def test_a_warm_up_that_found_no_server_is_what_the_servers_own_error_did() -> None:
    a = analyze_bytes(REFUSED.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and (rc.exception, rc.message) == ("KeyError", "'INFO'")
    assert "connection_refused" in {s.id for s in a.signatures}


def test_a_refused_connection_alone_still_fails_the_log() -> None:
    """With no server error in the log (a client's log), the refused connection is all there is to say."""
    a = analyze_bytes(REFUSED.split("Traceback (most recent call last):\n  File \"/env/sglang")[0].encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "ConnectionRefusedError"
    assert rc.signature == "connection_refused"
