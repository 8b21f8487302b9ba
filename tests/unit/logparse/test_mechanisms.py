"""Exceptions that are how something else showed, not what went wrong (found by the blind sets wild115 and
wild117, session 31): a task's cancellation that a timeout turned into ``TimeoutError``, a client's refused
connection to a server that was not listening; and a failure that names no exception, a Rust panic.  Every text
here is written for the test, in the forms the real logs showed."""

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



def test_a_bare_exception_is_not_placed_in_the_frames_of_one_chained_after_it() -> None:
    """A paste that starts at a bare ``TimeoutError`` (its frames above the cut), then a traceback chained after
    it: where it was raised is not in the paste, and the later traceback's innermost frame is not it."""
    log = ("asyncio.exceptions.TimeoutError\n\nThe above exception was the direct cause of the following "
           "exception:\n\nTraceback (most recent call last):\n"
           '  File "/env/uvicorn/protocols/http/httptools_impl.py", line 411, in run_asgi\n'
           "    result = await app(  # type: ignore[func-returns-value]\n"
           "RuntimeError: the request handler gave up\n")
    rc = analyze_bytes(log.encode()).root_cause
    assert rc is not None and rc.exception == "asyncio.exceptions.TimeoutError"
    assert message_shown(rc.to_dict()) == "(raised without a message)"


def test_a_server_that_could_not_listen_is_the_cause_of_the_connection_failures_after_it() -> None:
    """uvicorn could not bind (an earlier server held the port), then the server's own warmup request fails to
    connect: the port in use is the cause, the warmup's ``RemoteDisconnected`` what it did."""
    log = ("[2025-12-14 09:26:06] INFO:     Application startup complete.\n"
           "[2025-12-14 09:26:06] ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', "
           "30000): address already in use\n"
           "[2025-12-14 09:26:06] INFO:     Waiting for application shutdown.\n"
           "[2025-12-14 09:30:27] Initialization failed. warmup error: Traceback (most recent call last):\n"
           '  File "/opt/venv/lib/python3.10/site-packages/http/client.py", line 287, in _read_status\n'
           '    raise RemoteDisconnected("Remote end closed connection without"\n'
           "http.client.RemoteDisconnected: Remote end closed connection without response\n")
    rc = analyze_bytes(log.encode()).root_cause
    assert rc is not None and (rc.signature, rc.line_no) == ("port_in_use", 2)

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


PANIC = (
    "[Router (Rust)] 2025-05-21 03:52:00 - DEBUG - connected to 127.0.0.1:8001\n"
    "thread 'actix-rt|system:0|arbiter:0' panicked at src/router.rs:589:79:\n"
    "called `Option::unwrap()` on a `None` value\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
    "[Router (Rust)] 2025-05-21 03:52:00 - DEBUG - pooling idle connection for (\"http\", 127.0.0.1:8001)\n"
    "thread 'actix-rt|system:0|arbiter:42' panicked at src/router.rs:464:62:\n"
    "called `Result::unwrap()` on an `Err` value: PoisonError { .. }\n"
)


def test_a_rust_panic_is_the_cause_with_its_message_from_the_next_line() -> None:
    """sglang-router's panic (Rust >= 1.73 puts the message under the location): the first panic is the cause,
    the poisoned lock's panics after it its aftermath."""
    a = analyze_bytes(PANIC.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception is None and rc.signature == "rust_panic"
    assert rc.message == ("thread 'actix-rt|system:0|arbiter:0' panicked at src/router.rs:589:79: called "
                          "`Option::unwrap()` on a `None` value")
    assert rc.line_no == 2


def test_an_older_rusts_one_line_panic_and_its_backtrace() -> None:
    text = ("thread '<unnamed>' panicked at 'no entry found for key', tokenizers-lib/src/models/mod.rs:36:66\n"
            "stack backtrace:\n"
            "   0: rust_begin_unwind\n"
            "             at /rustc/90c5418/library/std/src/panicking.rs:578:5\n"
            "INFO 05-21 03:52:01 [api_server.py:1] shutting down\n")
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and rc.signature == "rust_panic"
    assert rc.message == "thread '<unnamed>' panicked at 'no entry found for key', tokenizers-lib/src/models/mod.rs:36:66"
    assert rc.traceback is not None and "rust_begin_unwind" in rc.traceback and "shutting down" not in rc.traceback


def test_a_panic_the_python_binding_raises_again_is_one_failure_told_in_python() -> None:
    """pyo3 raises the panic in Python (``PanicException``) right after Rust printed it: the Python traceback,
    with its frames, is the root cause, and the panic's hint stays with it."""
    text = ("thread '<unnamed>' panicked at src/runtime/blocking/shutdown.rs:51:21:\n"
            "Cannot drop a runtime in a context where blocking is not allowed.\n"
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
            "Traceback (most recent call last):\n"
            '  File "/env/sglang_router/router.py", line 123, in start\n'
            "    self._router.start()\n"
            "pyo3_runtime.PanicException: Cannot drop a runtime in a context where blocking is not allowed.\n")
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and rc.exception == "pyo3_runtime.PanicException" and rc.signature == "rust_panic"
    assert rc.line_no == 4 and "router.py" in (rc.traceback or "")


def test_a_request_that_met_a_dead_engine_tells_what_killed_it_and_the_server_failed() -> None:
    """vLLM 0.6's front end (here behind FastChat's worker): the engine loop died of a ``TypeError``, and each
    request after it fails with ``AsyncEngineDeadError`` raised from it; the server is stopped later in order.
    The engine's death failed the run, and the ``TypeError`` is why."""
    stamp = "2024-09-28 15:31:20 | ERROR | stderr | "
    tb = [
        "Traceback (most recent call last):",
        '  File "/env/vllm/inputs/parse.py", line 98, in parse_singleton_prompt',
        '    raise TypeError("inputs must be a string, TextPrompt, or TokensPrompt")',
        "TypeError: inputs must be a string, TextPrompt, or TokensPrompt",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/env/uvicorn/protocols/http/httptools_impl.py", line 401, in run_asgi',
        "    result = await app(  # type: ignore[func-returns-value]",
        '  File "/env/vllm/engine/async_llm_engine.py", line 65, in _log_task_completion',
        "    raise AsyncEngineDeadError(",
        "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.",
    ]
    text = ("2024-09-28 15:18:50 | INFO | stdout | INFO:     Application startup complete.\n"
            + stamp + "Exception in ASGI application\n"
            + "".join(stamp + line + "\n" for line in tb)
            + '2024-09-28 15:31:22 | INFO | stdout | INFO:     127.0.0.1:5000 - "POST /worker_generate HTTP/1.1" 500\n'
            "2024-09-28 16:02:11 | INFO | stdout | INFO:     Shutting down\n"
            "2024-09-28 16:02:11 | INFO | stdout | INFO:     Application shutdown complete.\n")
    a = analyze_bytes(text.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "TypeError"
    assert rc.message == "inputs must be a string, TextPrompt, or TokensPrompt" and rc.signature is None


def test_an_iterators_end_chained_to_an_error_is_that_error() -> None:
    """importlib ends its search with ``StopIteration`` and raises ``PackageNotFoundError`` while handling it
    (wild123, session 31): the error is what happened, not the iterator's end."""
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/importlib/metadata/__init__.py", line 398, in from_name\n'
            "    return next(cls.discover(name=name))\n"
            "StopIteration\n"
            "\n"
            "During handling of the above exception, another exception occurred:\n"
            "\n"
            "Traceback (most recent call last):\n"
            '  File "/env/sglang/srt/utils.py", line 640, in assert_pkg_version\n'
            "    installed_version = version(pkg)\n"
            "importlib.metadata.PackageNotFoundError: No package metadata was found for flashinfer_python\n")
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and rc.exception == "importlib.metadata.PackageNotFoundError"
    assert rc.message == "No package metadata was found for flashinfer_python"


def test_a_requests_traceback_through_v0s_engine_loop_is_the_engines_death() -> None:
    """vLLM V0's ``run_engine_loop`` ends for good on any exception in it: a request that failed there (a 500)
    failed the server, whatever came after (wild125, session 31)."""
    text = ('INFO:     127.0.0.1:60772 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
            "ERROR:    Exception in ASGI application\n"
            "Traceback (most recent call last):\n"
            '  File "/env/vllm/engine/async_llm_engine.py", line 498, in run_engine_loop\n'
            "    result = task.result()\n"
            '  File "/env/vllm/worker/neuron_model_runner.py", line 88, in _prepare_prompt\n'
            "    assert len(block_table) == 1\n"
            "AssertionError\n")
    a = analyze_bytes(text.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "AssertionError"
    assert rc.message == "assert len(block_table) == 1"
