"""Forms of session 46's fourth round (wild224-wild227).  Every text here is written for the test, in the forms
the real logs showed; the sets themselves stay a measure (``bench/verdict_score.py tests/data/wild224``)."""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes


def _log(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def _cause(*lines: str) -> tuple[str | None, int]:
    a = analyze_bytes(_log(*lines))
    assert a.failed and a.root_cause is not None
    return a.root_cause.signature, a.root_cause.line_no


_CUT = ["[2025-04-21 08:02:11 TP7] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/scheduler.py", line 2000, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 2']


def test_an_nccl_socket_connect_failure_before_a_cut_traceback_is_the_cause() -> None:
    """NCCL's ``socketStartConnect: Connect to ... failed`` warning, then a scheduler's start-up traceback, cut
    (wild225's form)."""
    assert _cause("h100-15:139:1092 [7] socket.c:485 NCCL WARN socketStartConnect: Connect to 127.0.0.1<38455> "
                  "failed : Software caused connection abort", *_CUT) == ("nccl_error", 1)


def test_an_infiniband_call_failing_in_nccl_is_the_cause() -> None:
    assert _cause("(LLMRayActor pid=1112) worker-0:1112:13532 [0] ibvwrap.c:160 NCCL WARN Call to ibv_modify_qp "
                  "failed with error Connection timed out", *_CUT)[0] == "nccl_error"


def test_pythons_abort_at_interpreter_shutdown_is_a_failure() -> None:
    """``Fatal Python error: _enter_buffered_busy`` after the work's end (a thread still writing to stdout): the
    interpreter aborted (wild224's form)."""
    assert _cause("Killing local vLLM worker processes",
                  "Fatal Python error: _enter_buffered_busy: could not acquire lock for <_io.BufferedWriter "
                  "name='<stdout>'> at interpreter shutdown, possibly due to daemon threads") == ("python_fatal_error", 2)


def test_pytests_setup_error_and_collection_errors_are_failures() -> None:
    """pytest's ``ERROR at setup of`` heading (a fixture raised), and a collection that found errors, the paste
    cut before the exception (wild227's forms)."""
    assert _cause("[2025-08-12T11:25:58Z] _ ERROR at setup of test_single_request[True-org/model-300M] _",
                  "[2025-08-12T11:25:58Z] ") == ("pytest_error", 1)
    assert _cause("============================= test session starts ==============================",
                  "collected 317 items / 2 errors / 1 deselected / 316 selected") == ("pytest_error", 2)


def test_a_passing_pytest_session_is_no_failure() -> None:
    a = analyze_bytes(_log("collected 12 items", "tests/test_x.py ............ [100%]",
                           "============================== 12 passed in 3.21s =============================="))
    assert not a.failed


def test_uvs_network_failure_in_a_ci_step_is_the_cause() -> None:
    assert _cause("Resolved 124 packages in 1.2s", "error: Request failed after 3 retries in 86.3s",
                  "  Caused by: Failed to download `sgl-kernel==0.3.9`",
                  "##[error]Process completed with exit code 2.") == ("pip_install_failed", 2)


_TS = "2024-11-18T16:43:45,497 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - "


def test_torchserves_model_log_prefix_is_a_collectors() -> None:
    """TorchServe relaying its model worker's lines (``ts [INFO ] W-9000-model_1.0-stdout MODEL_LOG - ``): a
    traceback behind it is read as one (wild226's form)."""
    a = analyze_bytes(_log(_TS + "Traceback (most recent call last):",
                           _TS + '  File "/x/huggingface_hub/file_download.py", line 1296, in get_hf_file_metadata',
                           _TS + "    r = _request_wrapper(",
                           _TS + "huggingface_hub.errors.GatedRepoError: 403 Client Error."))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.line_no) == ("huggingface_hub.errors.GatedRepoError", 1)


def test_a_go_components_panic_is_the_cause() -> None:
    """llm-d's endpoint picker (Go) dying of a nil pointer, its goroutine's stack after it (wild228's form)."""
    assert _cause('{"level":"info","ts":"2025-06-01T10:00:00Z","msg":"Starting endpoint picker"}',
                  "panic: runtime error: invalid memory address or nil pointer dereference",
                  "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1c2b3d4]", "",
                  "goroutine 412 [running]:") == ("go_panic", 2)


def test_a_ray_workers_line_whose_colour_code_lost_its_escape_is_read() -> None:
    """One line, Ray's ``[36m(main_task pid=N)`` with the escape byte and the reset lost (a copy from a web page):
    the worker's exception line behind it (wild230's form)."""
    a = analyze_bytes(_log("[36m(main_task pid=3523385) ValueError: max_num_batched_tokens (8192) is smaller than "
                           "max_model_len (9216)."))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process) == ("ValueError", "main_task")


def test_llms_destructor_finding_no_engine_shows_its_constructor_failed() -> None:
    """``Exception ignored in: <function LLM.__del__>`` then ``'LLM' object has no attribute 'llm_engine'``: an
    ignored exception, but it proves ``LLM(...)`` raised (wild231's form)."""
    a = analyze_bytes(_log("Exception ignored in: <function LLM.__del__ at 0x7fef2c991090>",
                           "Traceback (most recent call last):",
                           '  File "/x/vllm/entrypoints/llm.py", line 236, in __del__',
                           '    if self.llm_engine and hasattr(self.llm_engine, "shutdown"):',
                           "AttributeError: 'LLM' object has no attribute 'llm_engine'"))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "llm_init_failed"


def test_another_ignored_exception_at_exit_is_still_no_failure() -> None:
    a = analyze_bytes(_log("Processed prompts: 100%|##########| 8/8 [00:02<00:00,  3.9it/s]",
                           "Exception ignored in: <function Pool.__del__ at 0x7f>",
                           "Traceback (most recent call last):",
                           '  File "/x/multiprocessing/pool.py", line 268, in __del__',
                           "ValueError: I/O operation on closed file"))
    assert not a.failed


def test_nvshmems_failed_initialisation_is_the_cause() -> None:
    """DeepEP's NVSHMEM bootstrap failing across 48 ranks, no Python exception (wild234's form)."""
    assert _cause("NVSHMEM API called before NVSHMEM initialization has completed",
                  "/x/nvshmem/src/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_uid_alltoall:516: rank 3 nranks 48",
                  "node-1:132677:132677 [3] NVSHMEM INFO nvshmemi_common_init failed, continuing") == (
        "nvshmem_init_failed", 1)


def test_the_hip_runtime_failing_to_load_is_the_cause() -> None:
    """The engine's fatal-error lines on a Radeon APU: the HIP runtime did not load (wild233's form)."""
    engine = "(EngineCore_DP0 pid=160843) ERROR 03-05 12:36:31 [core.py:1006] "
    assert _cause(engine + "hip runtime failed to load.",
                  engine + "Error: Please provide architecture for which code is to be generated.") == (
        "hip_runtime_failed", 1)


def test_a_harnesss_tag_before_vllms_lines_is_a_collectors() -> None:
    """A test harness relaying vLLM's lines behind its own ``[VLLM LOG] `` tag: the worker's records behind it are
    read (wild232's form)."""
    tag = "[VLLM LOG] (Worker_TP3 pid=51793) ERROR 02-25 02:56:51 [multiproc_executor.py:783] "
    a = analyze_bytes(_log(tag + '  File "/x/vllm/model_executor/models/utils.py", line 291, in load_weights',
                           tag + '    autoloaded_weights = set(self._load_module("", self.module, weights))',
                           tag + '  File "/x/vllm/model_executor/models/utils.py", line 2'))
    assert a.failed and a.root_cause is not None and a.root_cause.process == "Worker_TP3"


def test_a_bracketed_level_before_a_process_prefix_is_not_taken_for_a_tag() -> None:
    from orchestrator.logparse.prefixes import parse_line
    assert parse_line("[ERROR] (x pid=3) boom").message.startswith("[ERROR]")


def test_a_request_handlers_traceback_in_a_ray_actor_hosting_the_server_is_one_requests() -> None:
    """vLLM's ``[serving_chat.py:N] Error in preprocessing prompt inputs`` in a Ray actor that hosts the server
    (``(PatchedvLLMServer pid=N)``), cut before its exception line: one request failed, not the server
    (wild235's form)."""
    rec = "(PatchedvLLMServer pid=1782948) ERROR 08-14 16:17:00 [serving_chat.py:222] "
    a = analyze_bytes(_log(rec + "Error in preprocessing prompt inputs", rec + "Traceback (most recent call last):",
                           rec + '  File "/x/vllm/entrypoints/openai/serving_chat.py", line 205, in create_chat',
                           rec + "    ) = await self._preprocess_chat(",
                           rec + '  File "/x/vllm/entrypoints/openai/serving_engine.py", line 8'))
    assert not a.failed
