"""A job that dies mid-run, in the forms our recipe's run log showed on a real GPU (sessions 36 and 37,
bench/gpu/crashes.py: tests/data/gpu/*_kill-engine, *_term-server, *_disk-full, *_oom-load, *_segv-worker).  Every
text here is written for the test."""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes

API = "(APIServer pid=1036) "
ENGINE = "(EngineCore pid=1437) "
PAD = " " * 20  # rich's log column: the client's tracebacks are indented to it


def _log(*lines: str) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


def test_an_engine_core_that_died_without_a_word_is_the_cause_not_the_recipes_report_of_it() -> None:
    a = analyze_bytes(_log(
        "[eorch] step extract: started",
        API + "WARNING 12-06 07:30:42 [core_client.py:702] [shutdown] MPClient: engine core exited unexpectedly; "
              "starting cleanup",
        API + "ERROR 12-06 07:30:42 [async_llm.py:704] vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
              "encountered an issue. See stack trace (above) for the root cause.",
        "[eorch] result: FAILED: extract: vLLM server died (exit code 0): vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    ))
    rc = a.root_cause
    assert a.failed and rc is not None and (rc.signature, rc.process) == ("worker_died", "APIServer")
    assert "engine core exited unexpectedly" in rc.message


def test_an_engine_core_that_exited_in_a_clean_stop_is_no_failure() -> None:
    a = analyze_bytes(_log(
        API + "INFO 12-06 07:43:16 [launcher.py:100] [shutdown] API server: shutdown triggered",
        API + "WARNING 12-06 07:43:16 [core_client.py:702] [shutdown] MPClient: engine core exited unexpectedly; "
              "starting cleanup",
        API + "INFO:     Application shutdown complete.",
    ))
    assert not a.failed


def _client_gives_up(*before: str) -> bytes:
    return _log(*before,
                "[speculators]            WARNING  Request aborted (attempt 1/4): Connection error.. Retrying in 2s...",
                "[speculators]            ERROR    Data generation failed",
                f"[speculators] {PAD}RuntimeError: Aborting: 4 consecutive samples errored out. The vLLM server may "
                "be unreachable.",
                "[eorch] result: FAILED: extract: speculators generate-offline-data exited 1; see the run log")


def test_a_client_that_gave_up_on_a_server_told_to_stop_names_the_stop() -> None:
    a = analyze_bytes(_client_gives_up(API + "INFO 12-06 07:43:16 [launcher.py:100] [shutdown] API server: "
                                             "shutdown triggered"))
    rc = a.root_cause
    assert a.failed and rc is not None and (rc.signature, rc.process) == ("stopped_under_client", "APIServer")
    assert rc.message == "[shutdown] API server: shutdown triggered" and rc.hint is not None


def test_a_client_that_gave_up_with_no_stop_before_it_is_the_cause() -> None:
    rc = analyze_bytes(_client_gives_up("[eorch] step extract: started")).root_cause
    assert rc is not None and rc.signature == "client_aborted"


def _client_traceback(*after_frame: str) -> list[str]:
    """The client's traceback as the recipe tags it (indented to rich's log column): a frame, then these lines."""
    return [f"[speculators] {PAD}{line}" for line in ("Traceback (most recent call last):",
                                                     '  File "/usr/lib/python3.12/shutil.py", line 886, in move',
                                                     *after_frame)]


def test_the_clients_indented_traceback_is_read_behind_the_recipes_tag() -> None:
    a = analyze_bytes(_log(
        "[speculators]            ERROR    Data generation failed",
        *_client_traceback("    os.rename(src, real_dst)", "FileNotFoundError: [Errno 2] No such file or directory:",
                           "'/out/.staging/cmpl-9f1.safetensors' -> '/out/hs_118.safetensors'"),
    ))
    rc = a.root_cause
    assert rc is not None and (rc.exception, rc.process) == ("FileNotFoundError", "speculators")
    assert "hs_118.safetensors" in rc.message


def test_a_hidden_states_write_that_failed_is_the_cause_of_the_clients_missing_file() -> None:
    a = analyze_bytes(_log(
        ENGINE + "ERROR 12-06 07:43:16 [example_hidden_states_connector.py:291] Hidden-states write failed for "
                 "req_id=cmpl-afc5: SafetensorError('Error while serializing: I/O error: No space left on device "
                 "(os error 28)')",
        *_client_traceback("FileNotFoundError: [Errno 2] No such file or directory: '/out/.staging/cmpl-afc5'"),
    ))
    rc = a.root_cause
    assert rc is not None and (rc.signature, rc.process) == ("hs_write_failed", "EngineCore")
    assert "No space left on device" in rc.message


def test_a_recipe_line_that_quotes_a_qualified_exception_names_it() -> None:
    rc = analyze_bytes(_log(
        "[eorch] canary: result: FAILED: serve: vLLM server failed to start: torch.OutOfMemoryError: CUDA out of "
        "memory. Tried to allocate 128.00 MiB.")).root_cause
    assert rc is not None and rc.exception == "torch.OutOfMemoryError"


def test_a_death_that_quotes_a_signal_exit_says_what_it_means() -> None:
    """vLLM writes ``(exit code: -11)``; the hint says SIGSEGV (and for 0: a handled stop, not the OOM killer)."""
    from orchestrator.logparse.events import RootCause
    from orchestrator.logparse.exits import with_quoted_exit

    def hint(code: str) -> str | None:
        said = f"Worker proc VllmWorker-0 died unexpectedly (exit code: {code}), shutting down executor."
        return with_quoted_exit(RootCause(None, said, "EngineCore", None, "worker_died", 9, "BASE")).hint

    assert hint("-11") == "Exit code -11: segmentation fault (SIGSEGV). BASE"
    assert hint("-9") == "Exit code -9: killed (SIGKILL; OOM killer?). BASE"
    assert hint("-15") == "Exit code -15: stopped by SIGTERM (a kill, a scheduler's stop or cancel). BASE"
    assert hint("-1") == "Exit code -1: ended by SIGHUP. BASE"
    assert hint("0") is not None and hint("0").startswith("Exit code 0: the process ended without an error")
    assert "OOM" not in (hint("0") or "")
    assert hint("None") == hint("1") == "BASE"
    other = RootCause(None, "died (exit code: -11)", "main", None, "recipe_failed", 9, "BASE")
    assert with_quoted_exit(other) is other


def _segfault(frames: int, *after: str) -> bytes:
    return _log(
        "[eorch] extract: 118/20000 samples, 58.43 samples/s",
        "!!!!!!! Segfault encountered !!!!!!!",
        *(f'  File "<unknown>", line 0, in frame_{i}' for i in range(frames)),
        *after,
    )


def test_a_crash_report_without_a_prefix_is_named_after_the_worker_said_to_have_died_after_it() -> None:
    died = ENGINE + ("ERROR 12-06 10:56:51 [multiproc_executor.py:284] Worker proc VllmWorker-3 died unexpectedly "
                     "(exit code: None), shutting down executor.")
    rc = analyze_bytes(_segfault(60, died)).root_cause
    assert rc is not None and (rc.signature, rc.process) == ("segfault_report", "VllmWorker-3")
    # no supervisor's line, or one too far below to be about it: the writer stays unknown (main)
    for text in (_segfault(60), _segfault(420, died)):
        rc = analyze_bytes(text).root_cause
        assert rc is not None and (rc.signature, rc.process) == ("segfault_report", "main")


def test_a_cpp_terminate_that_names_only_its_type_gives_way_to_what_c10_wrote_as_it_threw() -> None:
    """NCCL's watchdog: c10's ``[E...]`` record says the CUDA error, its native frames, then ``terminate called after
    throwing an instance of 'c10::DistBackendError'`` and the abort; later the engine times out (wild125 rw08)."""
    frames = [f"frame #{i}: c10::fn{i}() + 0x98 (0x7f57929785e8 in /x/torch/lib/libc10.so)" for i in range(10)]
    a = analyze_bytes(_log(
        ENGINE + "INFO 05-20 22:23:46 [core.py:163] init engine (profile, create kv cache, warmup model) took 1.83 s",
        "[rank1]:[E520 22:23:46.546600506 ProcessGroupNCCL.cpp:1896] [PG ID 2 PG GUID 3 Rank 1] Process group watchdog "
        "thread terminated with exception: CUDA error: an illegal memory access was encountered",
        "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 (most recent "
        "call first):",
        *frames,
        "",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "Fatal Python error: Aborted",
        "",
        *(ENGINE + f"INFO 05-20 22:24:{i % 60:02d} [loggers.py:116] Engine 000: Avg prompt throughput: 0.0 tokens/s"
          for i in range(70)),  # 40 s later: a traceback well after the abort
        ENGINE + "ERROR 05-20 22:24:26 [core.py:502] EngineCore encountered a fatal error.",
        ENGINE + "ERROR 05-20 22:24:26 [core.py:502] Traceback (most recent call last):",
        ENGINE + 'ERROR 05-20 22:24:26 [core.py:502]   File "/x/vllm/shm_broadcast.py", line 493, in acquire_read',
        ENGINE + "ERROR 05-20 22:24:26 [core.py:502]     raise TimeoutError",
        ENGINE + "ERROR 05-20 22:24:26 [core.py:502] TimeoutError",
    ))
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == "cuda_error"  # (a kernel's fault, not NCCL's)
    assert rc.message.endswith("CUDA error: an illegal memory access was encountered")

