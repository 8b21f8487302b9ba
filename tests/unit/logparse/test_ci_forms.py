"""A CI job's log (issue 15): pytest's report of a failed test (its ``E`` lines, its short summary) as a
Buildkite job shows it, stamped (``[2025-06-28T09:19:58Z] ``), and as its web view copies it (``\u00a0 | `` in front
of each line).  The texts are written the way pytest 8 and Buildkite print them."""

from __future__ import annotations

import pytest

from orchestrator.logparse import analyze_bytes

FAILURE = (b"=================================== FAILURES ===================================\n"
           b"________________________ test_kv_cache_events[True-tcp] ________________________\n"
           b"\n"
           b"    def test_kv_cache_events(monkeypatch):\n"
           b"        result = subscriber.receive_one(timeout=1000)\n"
           b'>       assert result is not None, "No message received"\n'
           b"E       AssertionError: No message received\n"
           b"E       assert None is not None\n"
           b"\n"
           b"v1/engine/test_engine_core_client.py:301: AssertionError\n")
SUMMARY = (b"=========================== short test summary info ============================\n"
           b"FAILED v1/engine/test_engine_core_client.py::test_kv_cache_events[True-tcp] - AssertionError: "
           b"No message received\n"
           b"============ 1 failed, 49 passed, 21 warnings in 706.77s (0:11:46) =============\n")


def _stamped(log: bytes, gutter: bytes = b"") -> bytes:
    return b"".join(gutter + b"[2025-06-28T09:19:58Z] " + line for line in log.splitlines(keepends=True))


@pytest.mark.parametrize("form", ["raw", "buildkite", "web view"])
def test_a_failed_tests_exception_is_read_from_its_e_lines(form: str) -> None:
    """The failure section's first ``E`` line names the exception and its message, the next ``E`` lines go on
    with it: the root cause, before the short summary that repeats it."""
    log = FAILURE + SUMMARY
    log = {"raw": log, "buildkite": _stamped(log), "web view": _stamped(log, b"\xc2\xa0 | ")}[form]
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None
    assert (rc.exception, rc.message, rc.line_no) == ("AssertionError", "No message received\nassert None is not None", 7)
    assert rc.signature == "pytest_exception"


@pytest.mark.parametrize(("summary", "exception"), [
    ((b"FAILED spec_decode/e2e/test_eagle.py::test_greedy[1-5-32] - torch.OutOfMemoryError: CUDA out of memory. "
      b"Tried to allocate 116.00 MiB"), "torch.OutOfMemoryError"),
    ((b"FAILED v1/engine/test_async_llm.py::test_abort[engine_args0-Hello my name is Robert and-DELTA] - assert not "
      b"True"), "AssertionError"),
    ((b"FAILED v1/llm/test_struct_output.py::test_structured_output[Qwen/Qwen2.5-1.5B-Instruct-guidance:disable] - "
      b"json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"), "json.decoder.JSONDecodeError"),
])
def test_the_short_summary_names_the_exception_when_the_failure_section_is_not_there(summary: bytes,
                                                                                    exception: str) -> None:
    """A paste of the summary only: the text after `` - `` names the exception (a bare ``assert``'s text is an
    ``AssertionError``'s), and the message keeps the test's name."""
    a = analyze_bytes(b"collected 12 items\n" + summary + b"\n==== 1 failed, 11 passed in 30.2s ====\n")
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == exception
    assert rc.message.startswith("FAILED ") and rc.signature in ("pytest_failed", "cuda_oom")


def test_an_e_column_with_no_exception_is_not_a_cause() -> None:
    """A line that only starts like pytest's column (a table, a name) is not a failure."""
    log = b"NAME   STATUS\nE      Error budget: 3 left\nE   runner ready\n"
    assert not analyze_bytes(log).failed


@pytest.mark.parametrize("end", [
    b"Error: Process completed with exit code 1.",  # GitHub Actions
    "\U0001f6a8 Error: The command exited with status 1".encode(),  # Buildkite
    b"ERROR: Job failed: exit code 1",  # GitLab CI
])
def test_the_ci_systems_word_that_the_step_failed_fails_the_log_and_points_above(end: bytes) -> None:
    """The CI system's last word is a symptom: the job failed, and what failed is the command's own ``Error:``
    line above it (a Go tool's, a click CLI's), not the CI's line."""
    log = (b"Run cd $GITHUB_ACTION_PATH\n"
           b"Installing chart-testing v3.10.1...\n"
           b'Error: getting Rekor public keys: GET "https://tuf-repo-cdn.sigstore.dev/timestamp.json": unexpected '
           b"HTTP status 500\n" + end + b"\n")
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None and rc.line_no == 3 and rc.message.endswith("unexpected HTTP status 500")


def test_a_clis_error_line_alone_is_not_a_failure_but_is_offered() -> None:
    """A CLI's ``Error: ...`` with nothing after it: an error line, the cause if the process then died, not a
    failure by itself (a followed run's exit status says)."""
    a = analyze_bytes(b"Starting server...\nError: [bentoml-cli] `serve` failed: Invalid Tag _service:svc\n")
    assert not a.failed
    assert a.root_cause is not None and a.root_cause.message == "[bentoml-cli] `serve` failed: Invalid Tag _service:svc"


def test_a_stamp_alone_stamps_an_empty_line() -> None:
    """Buildkite writes an empty line as its stamp alone, with no blank after it: still an empty line, so a chained
    traceback (an asyncio task's unretrieved exception, which the server went on from) is read as one."""
    log = (b"INFO 07-11 13:13:34 [async_llm_engine.py:222] Aborted request 85bac0a6.\n"
           b"Task exception was never retrieved\n"
           b"future: <Task finished name='Task-456' coro=<listen_for_disconnect() done>>\n"
           b"Traceback (most recent call last):\n"
           b'  File "/v/starlette/datastructures.py", line 668, in __getattr__\n'
           b"    return self._state[key]\n"
           b"KeyError: 'enable_server_load_tracking'\n"
           b"\n"
           b"During handling of the above exception, another exception occurred:\n"
           b"\n"
           b"Traceback (most recent call last):\n"
           b'  File "/v/entrypoints/utils.py", line 36, in listen_for_disconnect\n'
           b"    if request.app.state.enable_server_load_tracking:\n"
           b"AttributeError: 'State' object has no attribute 'enable_server_load_tracking'\n")
    stamped = b"".join(b"[2025-07-11T20:13:34Z]" + (b" " + line if line != b"\n" else line)
                       for line in log.splitlines(keepends=True))
    for form in (log, stamped, b"".join(b"\xc2\xa0 | " + line for line in stamped.splitlines(keepends=True))):
        a = analyze_bytes(form)
        assert not a.failed and a.root_cause is not None and a.root_cause.exception == "AttributeError"


def test_a_quoted_reports_e_lines_carry_a_multi_line_message() -> None:
    """A script's summary of a test run, the report's lines indented: pydantic's message goes on over the next
    ``E`` lines (the reason is there, not on the first), and the lines after them are not part of it."""
    log = (b"### E. core scheduler + prefix cache ###\n"
           b"  E       pydantic_core._pydantic_core.ValidationError: 1 validation error for ParallelConfig\n"
           b"  E         Value error, World size (2) is larger than the number of available GPUs (1) in this node.\n"
           b"  E           For further information visit https://errors.pydantic.dev/2.13/v/value_error\n"
           b"  FAILED tests/v1/core/test_scheduler.py::test_async_scheduling_pp\n"
           b"  1 failed, 232 passed, 15 warnings in 226.32s (0:03:46)\n")
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "pydantic_core._pydantic_core.ValidationError"
    assert rc.message.split("\n") == [
        "1 validation error for ParallelConfig",
        "Value error, World size (2) is larger than the number of available GPUs (1) in this node.",
        "For further information visit https://errors.pydantic.dev/2.13/v/value_error"]


def test_the_resource_trackers_keyerror_after_the_tests_passed_is_not_a_failure() -> None:
    """multiprocessing's resource tracker, relaunched at exit, prints a ``KeyError`` traceback for a segment it no
    longer knows: teardown noise after ``2 passed``, not a failure."""
    log = (b"2 passed, 2 warnings in 113.99s (0:01:53)\n"
           b"/usr/lib/python3.12/multiprocessing/resource_tracker.py:123: UserWarning: resource_tracker: process died "
           b"unexpectedly, relaunching.  Some resources might leak.\n"
           b"  warnings.warn('resource_tracker: process died unexpectedly, '\n"
           b"Traceback (most recent call last):\n"
           b'  File "/usr/lib/python3.12/multiprocessing/resource_tracker.py", line 239, in main\n'
           b"    cache[rtype].remove(name)\n"
           b"KeyError: '/mp-hyn5jc0t'\n")
    assert not analyze_bytes(log).failed
