"""Errors a job lives with, and the forms found by the blind sets wild22-wild25 (session 25).

* a worker that prints the same caught exception, from the same line of code, again and again while it goes on
  (a training loop's per-sample error) has not failed of it; a process that prints its fatal traceback twice
  (logged, then re-raised) or a few times has;
* vLLM's ``Failed to load plugin X`` record goes on with the traceback of an import vLLM caught: a later
  error is the cause;
* Ray's driver re-raising a remote worker's exception (``RayTaskError(X): ray::f()`` inside its traceback)
  names the worker's exception;
* Python logging's ``ERROR:root:...`` is a record, not an exception called ``ERROR``;
* Buildkite's ``[2025-05-20T05:24:31Z] `` stamps, pytest's ``FAILED path::test - ...`` summary, clap's
  (uv's) usage error.

Every text here is written for the test, in the forms the real logs showed.
"""

from __future__ import annotations

import re

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.repeats import SURVIVED, Repeats, site


def _as(text: str, endings: str) -> bytes:
    return (text if endings == "stored" else re.sub(r"\r\n?", "\n", text)).encode()


def _worker_error(pid: int, step: int) -> str:
    head = f"(LoopWorker pid={pid}) "
    return "".join(head + line + "\n" for line in [
        "ERROR:2025-11-19 19:07:43,953:Traceback (most recent call last):",
        '  File "/srv/app/loop/env.py", line 450, in update_state',
        "    self._extract_action(observation, output_text)",
        '  File "/srv/app/loop/env.py", line 266, in _extract_action',
        '    raise ValueError(f"step {self.step_idx} - extract action failed from: {output_text}")',
        f"ValueError: step {step} - extract action failed from: Thought: click the button",
        "",
        f"ERROR:2025-11-19 19:07:43,954:Error extracting action for item {step:04d}",
        "sampling the next batch",
    ])


TRAINING = "(TaskRunner pid=100) step 1: loss=0.71\n"


@pytest.mark.parametrize("endings", ["stored", "plain"])
def test_a_caught_error_printed_again_and_again_is_not_the_jobs_failure(endings: str) -> None:
    body = "".join(_worker_error(200 + i % 2, i) for i in range(2 * SURVIVED)) + TRAINING
    a = analyze_bytes(_as(TRAINING + body, endings))
    assert not a.failed  # its error lines stay evidence: the cause offered, should the process be found dead
    assert a.first_error is not None and a.first_error.line_no == 2


def test_a_few_prints_of_one_error_are_still_a_failure() -> None:
    """Below the count (a fatal traceback logged, then re-raised; a retry loop's attempts), it is the cause."""
    body = "".join(_worker_error(200, i) for i in range(SURVIVED - 1))
    a = analyze_bytes((TRAINING + body).encode())
    assert a.failed and a.root_cause is not None and a.root_cause.exception == "ValueError"
    assert a.root_cause.line_no == 2


def test_repeats_of_lines_without_a_pid_are_not_counted() -> None:
    """A shell loop that runs a crashing command again and again: every run died of it."""
    body = "".join(_worker_error(0, i).replace("(LoopWorker pid=0) ", "") for i in range(2 * SURVIVED))
    a = analyze_bytes(body.encode())
    assert a.failed and a.root_cause is not None and a.root_cause.exception == "ValueError"


def test_once_survived_every_writer_s_error_from_that_place_is_one() -> None:
    r = Repeats()
    place = "/srv/app/loop/env.py:266"
    assert not any(r.seen("LoopWorker:1", place) for _ in range(SURVIVED - 1))
    assert r.seen("LoopWorker:1", place) and place in r.survived
    assert not r.seen("LoopWorker:2", place)  # already survived: nothing new
    assert Repeats.from_dict(r.to_dict()).survived == [place]
    assert not r.seen("main", "/x.py:1")  # no pid: not counted


def test_the_place_is_the_last_frame_before_the_chain() -> None:
    text = """\
Traceback (most recent call last):
  File "/a.py", line 3, in f
  File "/b.py", line 9, in g
KeyError: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/c.py", line 1, in h
RuntimeError: boom"""
    assert site(text) == "/b.py:9"
    assert site("ValueError: no frames") is None


def _record(head: str, lines: list[str]) -> str:
    return "".join(head + line + "\n" for line in lines)


PLUGIN = "ERROR 03-10 10:47:27 [__init__.py:64] "
PLUGIN_FAILED = _record(PLUGIN, [
    "Failed to load plugin register_extra_models",
    "Traceback (most recent call last):",
    '  File "/srv/venv/lib/python3.12/site-packages/vllm/plugins/__init__.py", line 61, in load_plugins_by_group',
    "    func = plugin.load()",
    "ModuleNotFoundError: No module named 'langchain.docstore'",
])
API = "(APIServer pid=4127) "
LATER = _record(API, [
    "INFO 03-10 10:47:28 [utils.py:238] non-default args: {'model': 'nomic-ai/nomic-embed-text-v1.5'}",
    "Traceback (most recent call last):",
    '  File "/srv/venv/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 1329, in create_model_config',
    "    return ModelConfig(",
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
    "  Value error, Please pass the argument `trust_remote_code=True` to allow custom code to be run.",
])


def test_a_plugin_that_failed_to_load_is_not_the_cause_of_a_later_error() -> None:
    a = analyze_bytes((PLUGIN_FAILED + LATER).encode())
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "pydantic_core._pydantic_core.ValidationError"
    assert "trust_remote_code" in a.root_cause.message
    assert a.first_error is not None and a.first_error.message.startswith("Failed to load plugin")


def test_a_plugin_that_failed_to_load_alone_is_not_a_failure() -> None:
    a = analyze_bytes((PLUGIN_FAILED + API + "INFO 03-10 10:47:30 [api_server.py:1880] Starting vLLM API server 0 "
                       "on http://0.0.0.0:8000\n").encode())
    assert not a.failed
    assert "plugin_load_failed" in {s.id for s in a.signatures}


RAY_DRIVER = """\
Error executing job with overrides: ['data.train_batch_size=8']
Traceback (most recent call last):
  File "/srv/app/verl/trainer/main_ppo.py", line 62, in run_ppo
    ray.get(main_task.remote(config))
  File "/srv/venv/lib/python3.12/site-packages/ray/_private/worker.py", line 919, in get_objects
    raise value.as_instanceof_cause()
ray.exceptions.RayTaskError(NotImplementedError): \x1b[36mray::main_task()\x1b[39m (pid=19443, ip=127.0.0.1)
  File "/srv/app/verl/trainer/main_ppo.py", line 159, in main_task
    trainer.fit()
  File "/srv/app/verl/utils/reward_score/__init__.py", line 37, in _default_compute_score
    raise NotImplementedError
NotImplementedError: no reward function for data source 'maze'

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""


@pytest.mark.parametrize("endings", ["stored", "plain"])
def test_a_remote_exception_re_raised_by_rays_driver_is_the_workers(endings: str) -> None:
    a = analyze_bytes(_as(RAY_DRIVER, endings))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "NotImplementedError"
    assert a.root_cause.message == "no reward function for data source 'maze'"
    assert a.root_cause.traceback is not None and "RayTaskError(NotImplementedError)" in a.root_cause.traceback


def test_a_logging_record_after_frames_is_not_an_exception_named_error() -> None:
    text = """\
Traceback (most recent call last):
  File "/srv/app/x.py", line 3, in f
    g()
ERROR:root:giving up on the batch
"""
    a = analyze_bytes(text.encode())
    assert a.root_cause is not None and a.root_cause.exception != "ERROR"


BUILDKITE = "".join(f"[2025-05-20T05:24:3{i // 4}Z] {line}\n" for i, line in enumerate([
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core_client.py", line 484, in _wait',
    '    raise RuntimeError("Engine core initialization failed. "',
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    "Traceback (most recent call last):",
    '  File "/vllm-workspace/tests/utils.py", line 727, in wrapper',
    "    f(*args, **kwargs)",
]))


def test_buildkite_stamps_are_a_collectors_prefix() -> None:
    a = analyze_bytes(BUILDKITE.encode())
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "RuntimeError"
    assert a.root_cause.message.startswith("Engine core initialization failed")


def test_a_pytest_failure_in_the_short_summary_is_a_cause() -> None:
    a = analyze_bytes(b"[2026-02-17T08:12:14Z] FAILED v1/e2e/test_spec_decode.py::test_ngram[cfg1] - assert 53 >= 66\n"
                      b"[2026-02-17T08:12:14Z]  +  where 66 = int((0.66 * 100))\n")
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "pytest_failed"
    assert "assert 53 >= 66" in a.root_cause.message


def test_a_passing_pytest_run_is_not_a_failure() -> None:
    a = analyze_bytes(b"tests/test_x.py::test_ok PASSED\n=== 5 passed, 1 xfailed in 3.21s ===\n"
                      b"XFAIL tests/test_x.py::test_known - reason: flaky on CPU\n")
    assert not a.failed


def test_a_clap_usage_error_is_a_cli_usage_error() -> None:
    """uv (and other Rust tools) reject an option in clap's words, not argparse's."""
    a = analyze_bytes(b"(setup pid=1293) error: unexpected argument '--torch-backend' found\n(setup pid=1293) \n"
                      b"(setup pid=1293)   tip: a similar argument exists: '--no-cache'\n")
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "cli_usage_error"
    assert "--torch-backend" in a.root_cause.message
