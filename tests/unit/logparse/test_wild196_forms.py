"""Forms of session 45 (the known-wrong cases of wild192/193 and the blind sets from wild196 on).  Every text here
is written for the test, in the forms the real logs showed; the sets themselves stay a measure
(``bench/verdict_score.py tests/data/wild196``)."""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes


def _log(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


_RAY = ("ray.exceptions.RayTaskError(ActorDiedError): ray::Runner.run() (pid=41, ip=127.0.0.1, "
        "actor_id=0b28, repr=<main.Runner object at 0x7f>)")


def test_a_fragment_after_rays_wrapper_line_is_not_the_remote_exception_line() -> None:
    """A paste cut in the next record's timestamp (``[20``) after Ray's wrapper line: the wrapper still says what
    the worker raised (wild192's form)."""
    a = analyze_bytes(_log("[2026-03-12 11:17:34]   File \"/x/worker.py\", line 968, in get_objects",
                           "[2026-03-12 11:17:34]     raise value.as_instanceof_cause()",
                           f"[2026-03-12 11:17:34] {_RAY}", "[20"))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "ActorDiedError"
    assert "ray::Runner.run()" in a.root_cause.message


def test_a_word_after_rays_wrapper_line_is_still_read() -> None:
    a = analyze_bytes(_log(_RAY, '  File "/x/worker.py", line 3, in run', "    boom()",
                           "ValueError: bad shard index"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message) == ("ValueError", "bad shard index")


_WORKER = "(Worker_DP0_EP0 pid=26) ERROR 05-20 10:42:56 [multiproc_executor.py:962] "


def test_a_caret_line_a_paste_begins_at_is_not_named_as_the_error() -> None:
    """A worker's traceback pasted from its middle: its first record holds only a caret line, which says nothing
    (wild193's form)."""
    a = analyze_bytes(_log(_WORKER + "           ^^^^^^^^^^^^^^^^^^^^^",
                           _WORKER + '  File "/x/vllm/model_executor/models/deepseek_v2.py", line 1067, in forward',
                           _WORKER + "    return self.mla_attn(positions, hidden_states)",
                           "(EngineCore_DP0 pid=24) ERROR 05-20 10:42:56 [dump_input.py:81] Dumping scheduler stats: "
                           "SchedulerStats(num_running_reqs=809)"))
    assert a.failed and a.root_cause is not None
    assert "^^^" not in a.root_cause.message


def test_a_frame_line_cut_in_its_path_without_indentation_is_a_frame() -> None:
    """An SGLang scheduler's traceback, its indentation lost, cut in a frame line's path: the error line above it
    stays the cause, the cut frame is no exception line (wild193's form, flattened)."""
    a = analyze_bytes(_log(
        "[2025-05-15 19:49:08 DP49 TP49] Error fetching prefill parallel info from bootstrap: "
        "HTTPConnectionPool(host='prefill', port=8998): Max retries exceeded with url: /route (Caused by "
        "NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new "
        "connection: [Errno 111] Connection refused'))",
        "[2025-05-15 19:49:08 DP49 TP49] Scheduler hit an exception: Traceback (most recent call last):",
        'File "/sgl/python/sglang/srt/managers/scheduler.py", line 2233, in run_scheduler_process',
        "scheduler.event_loop_overlap_disagg_decode()",
        'File "/sgl/python/sglang/utils.py", line 471, in __call__',
        "return fn(obj)",
        'File "/sgl/python/sglang/srt/managers'))
    assert a.failed and a.root_cause is not None
    assert "Connection refused" in a.root_cause.message


def _wrapped(text: str, width: int) -> bytes:
    """``text`` as a terminal of ``width`` columns copies it: every longer line broken into rows of the width."""
    rows = []
    for line in text.splitlines():
        while len(line) > width:
            rows.append(line[:width])
            line = line[width:]
        rows.append(line)
    return "".join(row + "\n" for row in rows).encode()


_CORE = '(EngineCore_DP0 pid=37135)   File "/home/user/conda/envs/vllmenv/lib/python3.12/site-packages/vllm/v1/engine/core.py"'
_FRAMES_CUT = "\n".join([
    _CORE + ", line 846, in run_engine_core", "(EngineCore_DP0 pid=37135)     raise e",
    _CORE + ", line 833, in run_engine_core", "(EngineCore_DP0 pid=37135)     engine_core = EngineCoreProc(*args)",
    _CORE + ", line 606, in __init__", "(EngineCore_DP0 pid=37135)     super().__init__(",
    _CORE + ", line 109, in __init__", "(EngineCore_DP0 pid=37135)     num_gpu_blocks = self._initialize_kv_caches(",
    "(EngineCore_D"])


def test_a_workers_frames_cut_alike_at_a_terminals_edge_are_joined() -> None:
    """One prefix and one long path: every frame line is cut at the same column, so the rows are alike and end
    alike; the lines after them complete them (wild197-199's form, hard-wrapped)."""
    width = len(_CORE)
    a = analyze_bytes(_wrapped(_FRAMES_CUT, width))
    assert a.failed and a.root_cause is not None and a.root_cause.process == "EngineCore_DP0"
    assert a.root_cause.traceback is not None and 'core.py", line 109, in __init__' in a.root_cause.traceback
    assert analyze_bytes(_FRAMES_CUT.encode() + b"\n").failed  # as it was logged


def test_a_frame_cut_in_its_functions_name_counts_as_one_cut_alike() -> None:
    head = '(EngineCore pid=15940)   File "C:\\env\\Lib\\site-packages\\vllm\\model_executor\\kernels\\linear\\scal'
    lines = [head + 'ed_mm\\cutlass.py", line 265, in apply_scaled_mm', "(EngineCore pid=15940)     output = ops.mm(",
             head + 'ed_mm\\Kernel.py", line 162, in apply_weights', "(EngineCore pid=15940)     return self.apply(",
             '(EngineCore pid=15940)   File "C:\\env\\Lib\\site-packages\\vllm\\_custom_ops.py", line 802, in cutlass_mm',
             "(EngineCore pid=15940)     torch.ops._C.cutlass_scaled_mm(out, a, b,"]
    a = analyze_bytes(_wrapped("\n".join(lines), len(head)))
    assert a.failed and a.root_cause is not None and a.root_cause.process == "EngineCore"
    assert a.root_cause.traceback is not None and "in cutlass_mm" in a.root_cause.traceback


def test_uvs_resolver_failure_fails_the_log() -> None:
    a = analyze_bytes(_log("  × No solution found when resolving dependencies:",
                           "  ╰─▶ Because there is no version of xformers==0.0.33 and vllm==0.11.1 depends on "
                           "xformers==0.0.33, we can conclude that vllm==0.11.1 cannot be used."))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "pip_install_failed"


def test_a_wheel_for_another_platform_fails_the_install() -> None:
    a = analyze_bytes(_log("PS D:\\work> pip install vllm-0.8.5+cu118-cp38-abi3-manylinux1_x86_64.whl",
                           "ERROR: vllm-0.8.5+cu118-cp38-abi3-manylinux1_x86_64.whl is not a supported wheel on "
                           "this platform."))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "wheel_unsupported"


def test_cmakes_configure_error_inside_pips_build_is_the_cause_not_the_hooks_cut_traceback() -> None:
    a = analyze_bytes(_log(
        "  Building wheel for vllm (pyproject.toml) ... error", "  error: subprocess-exited-with-error",
        "      running build_ext", "      CMake Error at CMakeLists.txt:3 (project):", "        Running",
        "         '/env/bin/ninja' '--version'", "        failed with:", "         no such file or directory",
        "      -- Configuring incomplete, errors occurred!", "      Traceback (most recent call last):",
        '        File "/env/pip/_vendor/pyproject_hooks/_in_process/_in_process.py", line 3'))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "build_configure_failed"
    assert a.root_cause.message.startswith("CMake Error at CMakeLists.txt:3")


def test_a_vllm_critical_record_is_a_process_going_down() -> None:
    """vLLM logs at CRITICAL only as a process goes down; a paste cut in the record's head still shows it
    (wild201's form: 500s, then ``CRITICAL 11-12 21:18:52 lau``)."""
    serving = ["INFO 11-12 21:18:40 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000",
               'INFO:     127.0.0.1:44716 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error']
    for last in ("CRITICAL 11-12 21:18:52 lau",
                 "CRITICAL 11-12 21:18:52 [launcher.py:99] Engine is gone, terminating server process"):
        a = analyze_bytes(_log(*serving, last))
        assert a.failed and a.root_cause is not None and a.root_cause.signature == "critical_record"


def test_a_critical_word_in_a_message_is_no_record() -> None:
    a = analyze_bytes(_log("INFO 11-12 21:18:40 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000",
                           "INFO 11-12 21:18:41 [logger.py:3] Received request: prompt: 'Rate it CRITICAL 11-12 "
                           "21:18:52 or not'"))
    assert not a.failed


def test_v0s_engine_background_task_failed_is_the_engine_dying() -> None:
    a = analyze_bytes(_log("INFO 02-12 12:19:02 api_server.py:212] Started server process [4121]",
                           'INFO:     127.0.0.1:59542 - "POST /v1/completions HTTP/1.1" 200 OK',
                           "INFO 02-12 12:20:21 async_llm_engine.py:211] Added request cmpl-b5-0.",
                           "ERROR 02-12 12:20:21 async_llm_engine.py:68] Engine background task failed",
                           "ERROR 02-12 12:20:21 async_llm_engine.py:68] Traceback (most recent call last):",
                           'ERROR 02-12 12:20:21 async_llm_engine.py:68]   File "/env/vllm/engine/async_llm_engine.py",'
                           " line 58, in _log_task_completion"))
    assert a.failed and a.root_cause is not None


def test_rays_memory_monitor_kill_is_host_ram_not_gpu_memory() -> None:
    """Ray's ``OutOfMemoryError`` is its memory monitor killing a worker for the node's RAM: not ``cuda_oom``,
    whose advice (lower --gpu-memory-utilization) would be wrong (wild197's form)."""
    text = ("OutOfMemoryError: Task was killed due to the node running low on memory.")
    for line in (f"ERROR 03-21 17:27:44 [core.py:340] ray.exceptions.{text}", text):
        a = analyze_bytes(_log(line, "Memory on the node (IP: 127.0.0.1) where the task was running was 2152.43GB / "
                                     "2265.25GB (0.950196), which exceeds the memory usage threshold of 0.95."))
        assert a.failed and a.root_cause is not None and a.root_cause.signature == "ray_oom_killed"
        assert [s.id for s in a.signatures] == ["ray_oom_killed"]
    a = analyze_bytes(_log("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."))
    assert a.root_cause is not None and a.root_cause.signature == "cuda_oom"


_NIXL = "(Worker_DP0_EP0 pid=2823) ERROR 10-16 17:22:56 [nixl_connector.py:{}] {}"


def test_an_exception_one_request_failed_of_is_lived_with() -> None:
    """A KV connector's handshake error, then its word that the request failed: that request's error, caught (the
    decode node recomputes the prompt), not the worker's death (wild202's form)."""
    exc = _NIXL.format(815, "RuntimeError: Remote NIXL agent engine ID mismatch. Expected 4612_dp0, received 96b1_dp0.")
    a = analyze_bytes(_log(exc, _NIXL.format(827, "Handshake failed for request chatcmpl-7f3a")))
    assert not a.failed and a.root_cause is not None and a.root_cause.exception == "RuntimeError"
    a = analyze_bytes(_log(exc))  # alone: what the worker died of, as far as the log shows
    assert a.failed


def test_a_clients_error_record_above_its_cut_traceback_says_what_failed() -> None:
    """genai-perf's records (a ``datefmt`` without seconds, ``name:line - msg``): its error record, then the
    traceback it goes on with, cut before its exception line (wild201's form)."""
    a = analyze_bytes(_log("2025-03-10 10:13 [ERROR] genai_perf.utils:93 - Failed to parse JSON string: '[DONE]'",
                           "Traceback (most recent call last):",
                           '  File "/venv/genai_perf/subcommand/common.py", line 77, in calculate_metrics',
                           "    return LLMProfileDataParser("))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.message == "Failed to parse JSON string: '[DONE]'"


def test_hccls_failure_to_connect_the_ranks_fails_the_log() -> None:
    a = analyze_bytes(_log("[ERROR] HCCL(747049,):2026-06-05-03:43:35.945.631 [rank_info_detect_service.cc:114]"
                           "[754710][RankInfoDetectService::GetConnections] no rank connection success."))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "hccl_no_connection"


def test_a_wrapper_saying_its_container_stopped_with_an_error_fails_the_log() -> None:
    a = analyze_bytes(_log("[switch] waiting for http://localhost:8031/v1/models (timeout 600s)...",
                           "[switch]   28s — Loading weights",
                           "[switch] ERROR: container 'vllm-gemma' is no longer running (state=false, exit=1)."))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "process_exited"
    a = analyze_bytes(_log("[switch] container 'vllm-gemma' is no longer running (state=false, exit=0)."))
    assert not a.failed


def test_sglangs_ready_line_is_serving() -> None:
    a = analyze_bytes(_log("[2025-11-05 16:35:02] The server is fired up and ready to roll!",
                           '[2025-11-05 16:38:04] INFO:     127.0.0.1:32770 - "GET /health HTTP/1.1" 200 OK'))
    assert not a.failed and a.phase.value == "serving"


def test_an_infiniband_completion_error_in_ncclwarn_is_nccls_failure() -> None:
    a = analyze_bytes(_log("node-a:4121:4190 [0] NCCL WARN NET/IB : Got completion from peer 127.0.0.1<50212> with "
                           "error 12, opcode 0, len 0, vendor err 129 (Recv)",
                           "node-a:4121:4190 [0] NCCL INFO transport/net.cc:1302 -> 6"))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "nccl_error"


def test_a_transfer_threads_error_for_one_request_is_lived_with() -> None:
    """SGLang's P/D transfer worker: a traceback, then its word that the request's transfer failed (no needle of
    an error in it), then the request answered with a 500: the server goes on (wild205's form)."""
    a = analyze_bytes(_log(
        "Unexpected transfer worker error for room 1788380104266545413", "Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/disaggregation/nixl/conn.py", line 2062, in maybe_send_extra',
        "    raise RuntimeError(",
        "RuntimeError: PD Disaggregation does NOT support PD different TP sizes for non-MLA SWA hybrid models yet.",
        "Prefill transfer failed for request rank=0 req.rid='5b02' with exception PD Disaggregation does NOT support",
        'INFO: 127.0.0.1:54838 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error'))
    assert not a.failed and a.root_cause is not None and a.root_cause.exception == "RuntimeError"


def test_a_log_cut_at_a_logged_raise_statement_is_a_traceback_cut_before_its_exception_line() -> None:
    """An engine core's traceback logged as error records, the paste cut at the frame's ``raise`` line (wild206's
    form, behind a Ray actor's prefix)."""
    a = analyze_bytes(_log("(vLLMHttpServer pid=3616) INFO 01-22 09:41:50 [api_server.py:1] vLLM API server version 0.13",
                           "(vLLMHttpServer pid=3616) (EngineCore_DP0 pid=3634) ERROR 01-22 09:42:00 [patch_core.py:58]"
                           "     raise ValueErro"))
    assert a.failed and a.root_cause is not None and a.root_cause.process == "EngineCore_DP0"
    assert a.root_cause.exception is None and a.root_cause.traceback is not None


def test_pm2s_column_is_a_collectors_prefix() -> None:
    """pm2's ``0|app  | `` in front of each line of the process it runs (wild206's form): a client's request
    cancelled under the ASGI app, its traceback behind the column, the paste cut in the column of a frame line."""
    pm2 = "0|startvllm72b  | "
    lines = [pm2 + line for line in (
        "Traceback (most recent call last):", '  File "/env/sse_starlette/sse.py", line 221, in listen_for_disconnect',
        "    message = await receive()", "asyncio.exceptions.CancelledError: Cancelled by cancel scope 7f81f02e3be0",
        "During handling of the above exception, another exception occurred:", "Traceback (most recent call last):",
        '  File "/env/uvicorn/protocols/http/httptools_impl.py", line 419, in run_asgi')]
    a = analyze_bytes(_log("RROR:    Exception in ASGI application", *lines, "0|star"))
    assert a.root_cause is not None and a.root_cause.exception == "asyncio.exceptions.CancelledError"


def test_pythons_own_line_for_a_module_it_cannot_run_fails_the_log() -> None:
    a = analyze_bytes(_log("Error while finding module specification for 'eagle.ge_data.allocation' "
                           "(ModuleNotFoundError: No module named 'eagle.ge_data')"))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "python_module_missing"
    assert a.root_cause.exception == "ModuleNotFoundError"


def test_a_rust_mains_error_is_its_programs_end() -> None:
    """sglang-router's start-up failing: a Rust ``main`` returning an error prints its Debug form, quoted, and
    exits (wild209's form); an error line that merely starts so is not one."""
    a = analyze_bytes(_log("2026-01-10T08:00:01Z  INFO sglang_router: starting router",
                           'Error: "PVD vector coordinator health check failed: error sending request"'))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "rust_main_error"
    a = analyze_bytes(_log('Error: "x" is not a valid value, using the default',
                           "INFO 05-02 10:00:09 [api_server.py:1000] Starting vLLM API server on http://0.0.0.0:8000"))
    assert not a.failed


def test_the_process_managers_sigterm_after_a_failed_start_is_no_orderly_stop() -> None:
    """vLLM's API server ends its engine after the engine's start failed (``[shutdown] Process manager: send
    sigterm to process EngineCore``), then raises: the start failed (wild209's form)."""
    a = analyze_bytes(_log(
        "(EngineCore pid=451) Exception: WorkerProc initialization failed due to an exception in a background "
        "process. See stack trace for root cause.",
        "(APIServer pid=1) INFO 09-22 07:22:29 [utils.py:620] [shutdown] Process manager: send sigterm to process "
        "EngineCore",
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
        "proc(s): {}"))
    assert a.failed and a.phase.value == "failed"


def test_a_caret_line_just_above_a_cut_traceback_is_not_its_message() -> None:
    """A worker's records pasted from a caret line, the traceback after it cut before its exception line (wild211's
    form): the caret line says nothing of what failed."""
    w = "(VllmWorker rank=2 pid=1204) ERROR 06-05 02:08:42 [multiproc_executor.py:522] "
    a = analyze_bytes(_log(w + "           ^^^^^^^^^^^^^^^^^^^^^^",
                           w + '  File "/env/torch/nn/modules/module.py", line 1762, in _call_impl',
                           w + "    return forward_call(*args, **kwargs)", "(VllmWorker rank=2 pid=1204) ERROR 06-05 02:08"))
    assert a.failed and a.root_cause is not None and "^^^" not in a.root_cause.message
