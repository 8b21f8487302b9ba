"""Forms of session 47's blind sets (wild236-).  Every text here is written for the test, in the forms the real
logs showed; the sets themselves stay a measure (``bench/verdict_score.py tests/data/wild236``)."""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.phases import Phase


def _log(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


_SERVING = ['(APIServer pid=7) INFO:     127.0.0.1:5149 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
            ("(APIServer pid=7) INFO 04-15 07:19:51 [loggers.py:259] Engine 000: Avg prompt throughput: 53.9 tokens/s, "
             "Avg generation throughput: 0.1 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.2%")]


def test_macos_libcxx_terminate_is_the_cause_with_its_type_and_text() -> None:
    """macOS's ``libc++abi: terminating due to uncaught exception of type std::runtime_error: ...`` (no
    ``terminate called after throwing``), then the engine's death as the API server saw it (wild238's form)."""
    a = analyze_bytes(_log(*_SERVING,
                           "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command "
                           "buffer execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
                           "(APIServer pid=7) ERROR 04-15 07:22:58 [core_client.py:667] Engine core proc EngineCore died "
                           "unexpectedly, shutting down client."))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.exception, a.root_cause.line_no) == ("cpp_terminate", "std::runtime_error", 3)
    assert "Insufficient Memory" in a.root_cause.message


def test_the_engines_input_dump_is_its_step_failing_and_its_body_no_cause() -> None:
    """vLLM 0.9's ``Dumping input data`` (no ``for V1 LLM engine``), then the dump's config record, the log cut
    there: the engine's step failed; the dump's body is not an error of its own (wild238's form)."""
    a = analyze_bytes(_log(
        "INFO 06-14 14:17:31 [async_llm.py:271] Added request cmpl-849f-0.",
        "ERROR 06-14 14:17:31 [dump_input.py:69] Dumping input data",
        "ERROR 06-14 14:17:31 [dump_input.py:71] V1 LLM engine (v0.9.1) with config: model='Qwen/Qwen2.5-0.5B', "
        "speculative_config=None"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("input_dump", 2)


_HANDLER = "ERROR 07-30 20:29:47 [serving_chat.py:932] "


def test_a_request_traceback_through_the_output_handler_is_the_servers_failure() -> None:
    """A chat stream's error traceback whose frames go through V1's output handler (``raise output`` of the
    exception the handler met): every request gets it, the server is done, even cut before its exception line
    (wild236's form)."""
    a = analyze_bytes(_log(*(_HANDLER + t for t in (
        "Error in chat completion stream generator.",
        "Traceback (most recent call last):",
        '  File "/x/vllm/entrypoints/openai/serving_chat.py", line 497, in chat_completion_stream_generator',
        "    async for res in result_generator:",
        '  File "/x/vllm/v1/engine/output_processor.py", line 57, in get',
        "    raise output",
        '  File "/x/vllm/v1/engine/async_llm.py", line 375, in output_handler',
        "    outputs = await engine_core.get_output_async()"))))
    assert a.failed


def test_a_headless_request_traceback_in_the_detokenizer_keeps_its_frames_and_fails_the_server() -> None:
    """The same, pasted from inside the detokenizer's frames down to the exception (no header): the frames logged
    as records above the exception line belong to its traceback (wild235's form)."""
    a = analyze_bytes(_log(*(_HANDLER + t for t in (
        '  File "/x/vllm/v1/engine/detokenizer.py", line 219, in decode_next',
        "    token = self._protected_step(next_token_id)",
        '  File "/x/vllm/v1/engine/detokenizer.py", line 233, in _protected_step',
        "    token = self.stream.step(self.tokenizer, next_token_id)",
        "TypeError: argument 'id': StreamInput must be either an integer or a list of integers"))))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "TypeError"
    assert "in _protected_step" in (a.root_cause.traceback or "")


def test_a_request_handlers_headless_traceback_elsewhere_stays_one_requests() -> None:
    """Guard: a request handler's headless traceback that does not go through the output handler is one
    request's failure, while the server goes on."""
    a = analyze_bytes(_log(*(_HANDLER + t for t in (
        '  File "/x/vllm/entrypoints/openai/serving_chat.py", line 210, in create_chat_completion',
        "    request_prompts, engine_prompts = await self._preprocess_chat(",
        "ValueError: As of transformers v4.44, default chat template is no longer allowed")),
        '(APIServer pid=7) INFO:     127.0.0.1:5150 - "POST /v1/chat/completions HTTP/1.1" 200 OK'))
    assert not a.failed


def test_a_health_check_answered_or_a_request_taken_shows_a_server_serving() -> None:
    """A log whose start-up is cut off: a health check answered, vLLM's request logger taking a request (wild239's
    form)."""
    assert analyze_bytes(_log('INFO:     10.0.0.5:36338 - "GET /health HTTP/1.1" 200 OK')).phase is Phase.SERVING
    assert analyze_bytes(_log(
        "INFO 10-31 21:08:41 [logger.py:39] Received request cmpl-82a2-0: prompt: 'Explain', params: "
        "SamplingParams(n=1)",
        "INFO 10-31 21:08:41 [async_llm.py:256] Added request cmpl-82a2-0.")).phase is Phase.SERVING
    assert analyze_bytes(_log('INFO:     10.0.0.5:36338 - "GET /health HTTP/1.1" 503 Service Unavailable'
                              )).phase is not Phase.SERVING


def test_tritons_ptxas_failure_is_the_cause_behind_a_ray_data_actors_prefix() -> None:
    """ptxas's ``fatal`` lines behind Ray Data's actor prefix, its name nested (``MapWorker(MapBatches(X))``), with
    Ray's ``[repeated 8x across cluster]`` (wild241's form)."""
    ray = "(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=12390, ip=10.0.118.90) "
    a = analyze_bytes(_log(ray + "`ptxas` stderr: [repeated 8x across cluster]",
                           ray + "ptxas /tnp/tmpbc.ptx, line 113; fatal   : Parsing error near '.': syntax error "
                                 "[repeated 8x across cluster]",
                           ray + "ptxas fatal   : Ptx assembly aborted due to errors [repeated 8x across cluster]"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.process, a.root_cause.line_no) == (
        "ptxas_failed", "MapWorker(MapBatches(vLLMEngineStageUDF))", 2)


def test_a_wrappers_word_that_vllms_output_ended_before_ready_is_a_failed_start() -> None:
    """Unsloth's ``Stdout stream ended before readiness message detected.`` after vLLM's first lines (wild243's
    form)."""
    a = analyze_bytes(_log("vLLM STDOUT: INFO 06-03 03:57:22 [__init__.py:243] Automatically detected platform cuda.",
                           "Stdout stream ended before readiness message detected.",
                           "-----------------------------------------"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("wrapper_start_failed", 2)


def test_old_sglangs_sigquit_from_a_child_is_its_death() -> None:
    """SGLang's ``Received sigquit from a child proces.`` (older releases' spelling), relayed by a pipeline's
    logger, then the pipeline giving up (wild243's form)."""
    a = analyze_bytes(_log(
        "2025-03-04 16:02:53,191 - __main__ - INFO - [2025-03-04 16:02:53] Received sigquit from a child proces. It "
        "usually means the child failed.",
        "2025-03-04 16:02:53,267 - __main__ - ERROR - Ended up starting the sglang server more than 5 times, "
        "cancelling pipeline"))
    assert a.failed
    assert "sglang_child_failed" in {s.id for s in a.signatures}


def test_a_lone_lower_case_word_after_frames_is_a_cut_line_not_the_exception() -> None:
    """A traceback behind docker compose's column, the log cut in the next line's column (``sglan``): cut before
    its exception line, not an exception named ``sglan`` (wild240's form)."""
    col = "sglang-kimi-k2  | "
    a = analyze_bytes(_log(col + "[2025-12-02 18:40:17 TP7] Scheduler hit an exception: Traceback (most recent call last):",
                           col + '  File "/x/sglang/srt/managers/scheduler.py", line 1999, in run_batch',
                           col + "    batch_result = self.model_worker.forward_batch_generation(",
                           "sglan"))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception is None


def test_vllm_02s_aborted_requests_show_a_server_but_no_life_after_an_error() -> None:
    """``Aborted request ID.`` (vLLM 0.2's async engine): the server was serving (wild242's form); but an engine that
    died aborts every request, so after an error they are no sign of it going on."""
    aborted = "INFO 01-17 03:11:25 async_llm_engine.py:134] Aborted request 0e89f1d2d94c4a039f868222c100cc8a."
    assert analyze_bytes(_log(aborted)).phase is Phase.SERVING
    a = analyze_bytes(_log(
        "INFO 01-17 03:11:20 async_llm_engine.py:379] Received request 0e89f1: prompt: 'Hi', sampling params: x",
        "ERROR 01-17 03:11:24 async_llm_engine.py:29] Engine background task failed",
        "RuntimeError: CUDA error: an illegal memory access was encountered", aborted))
    assert a.failed


def test_grep_n_of_a_journal_numbers_sparse_lines_and_is_read_without_them() -> None:
    """``journalctl ... | grep -n Error``: matches only, their numbers far apart, in front of journald's prefix
    (wild247's form): the exception line under them names its class and process."""
    j = "Feb 26 17:41:{} host python3.12[409240]: (EngineCore_DP0 pid=409240) "
    a = analyze_bytes(_log(
        "9:" + j.format(22) + "ValueError: Free memory on device cuda:0 (0.32/23.56 GiB) on startup is less than "
        "desired GPU memory utilization (0.9, 21.2 GiB).",
        "67:Feb 26 17:41:24 host systemd[1669]: vllm.service: Main process exited, code=exited, status=1/FAILURE",
        "70:Feb 26 17:41:29 host systemd[1669]: vllm.service: Scheduled restart job, restart counter is at 2740."))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process, a.root_cause.line_no) == ("ValueError", "EngineCore_DP0", 9)


def test_a_cuda_driver_error_of_a_c_extension_is_the_cause() -> None:
    """torch_memory_saver's ``CUresult error: 2 (out of memory)`` while an RL trainer wakes its engines, then the
    trainer's timeouts (wild246's form)."""
    a = analyze_bytes(_log(
        "(SGLangHttpServer pid=250977) [torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/utils.h "
        "func=cu_mem_create line=194",
        "(WorkerDict pid=209740) WARNING:2025-11-28 16:00:45,396:Async request to resume_memory_occupation timed out "
        "(attempt 1)"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.process) == ("cuda_driver_error", "SGLangHttpServer")


def test_v0s_engine_error_record_cut_after_its_repr_is_the_cause_of_its_death() -> None:
    """``MQLLMEngine is already dead``, then the engine's own record of what killed it, logged late and cut in its
    ``repr`` (``ValueError('Attempted to ...``) (wild245's form)."""
    a = analyze_bytes(_log(
        "INFO 04-01 15:54:34 [engine.py:310] Added request chatcmpl-528c.",
        "CRITICAL 04-01 15:54:34 [launcher.py:116] MQLLMEngine is already dead, terminating server process",
        'INFO:     127.0.0.1:57498 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        "ERROR 04-01 15:54:34 [engine.py:160] ValueError('Attempted to assign 1 x 1792 = 1792 multimo"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.line_no) == ("ValueError", 4)
    assert a.root_cause.message.startswith("Attempted to assign")


def test_a_mangled_line_right_after_a_header_is_a_frame_not_the_exception() -> None:
    """A traceback whose ``File`` line was lost and its source line garbled: the exception line after it is the
    cause (wild246's form)."""
    a = analyze_bytes(_log("Traceback (most recent call last):",
                           "generatigeneration_kwargson_kwargs.update(self.args.)",
                           "TypeError: 'NoneType' object is not iterable", "    ..."))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "TypeError"


def test_pythons_logging_as_json_records_is_read_as_message_and_traceback() -> None:
    """A JSON formatter's records (``message``, the traceback in ``exc_info``), one a line and pretty-printed by jq
    with ``exc_info`` an array (wild247's form)."""
    rec = '{{"asctime": "2026-01-21 08:28:{}", "levelname": "{}", "name": "vllm", "message": "{}"{}}}'
    exc = ('"Traceback (most recent call last):\\n  File \\"x.py\\", line 402, in f\\n    g()\\n'
           'requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://hf.co/x/config.json"')
    one = analyze_bytes(_log(rec.format(30, "INFO", "Starting vLLM API server", ""),
                             rec.format(31, "INFO", "Resolved architecture: LlamaForCausalLM", ""),
                             rec.format(33, "CRITICAL", "Uncaught exception", ', "exc_info": ' + exc)))
    pretty = analyze_bytes(_log("{", '  "levelname": "CRITICAL",', '  "message": "Uncaught exception",',
                                '  "exc_info": [', '    "Traceback (most recent call last):",',
                                '    "File \\"x.py\\", line 402, in f\\n    g()",',
                                '    "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: '
                                'https://hf.co/x/config.json"', "  ]", "}"))
    for a, line_no in ((one, 3), (pretty, 5)):  # (the header's line: the record's, or its own)
        assert a.failed and a.root_cause is not None
        assert (a.root_cause.exception, a.root_cause.line_no) == ("requests.exceptions.HTTPError", line_no)


def _signature_at(*lines: str) -> tuple[str | None, int]:
    a = analyze_bytes(_log(*lines))
    assert a.failed and a.root_cause is not None
    return a.root_cause.signature, a.root_cause.line_no


def test_ggml_out_of_memory_is_the_cause_of_the_go_runners_panic() -> None:
    """Ollama's runner, through journald: ggml's ``cudaMalloc failed: out of memory``, the load failing, then the Go
    runner's ``panic: unable to load model`` (wild250's form)."""
    j = "Feb 21 01:41:16 paibo ollama[402476]: "
    assert _signature_at(
        j + 'time=2025-02-21T01:40:58.260Z level=INFO source=server.go:591 msg="waiting for server to become available"',
        j + "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 81656.95 MiB on device 0: cudaMalloc failed: out "
            "of memory",
        j + "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
        j + "panic: unable to load model: /usr/share/ollama/.ollama/models/blobs/sha256-b74f",
        j + "goroutine 85 [running]:") == ("ggml_cuda_oom", 2)


def test_llama_cpps_abort_and_tgis_warmup_failure_are_causes() -> None:
    """llama-server's ``FILE.cu:LINE: fatal error`` then its backtrace; TGI's router failing its warm-up (wild250,
    wild251's forms)."""
    assert _signature_at("[46009] /x/llama.cpp/ggml/src/ggml-cuda/fattn.cu:579: fatal error",
                         "[46009] /x/llama.cpp/build/bin/libggml-base.so.0(+0x18665) [0x7fbfdb553665]") == ("ggml_abort", 1)
    assert _signature_at(
        "ERROR warmup{max_input_length=Some(30000) max_prefill_tokens=31000}:warmup: text_generation_router_v3::client: "
        "backends/v3/src/client/mod.rs:45: Server error: Not enough memory to handle 31000 prefill tokens.") == (
        "tgi_warmup_failed", 1)


def test_an_older_kernels_memory_cgroup_report_is_an_oom_kill() -> None:
    """``dmesg -T`` in a Chinese locale: a container's OOM report, its kill told as ``Task in /docker/ID killed as a
    result of limit of host`` (wild251's form)."""
    assert _signature_at("[四 3月 20 21:01:25 2025]  page_fault+0x3e/0x50",
                         "[四 3月 20 21:01:25 2025] Task in /docker/6b45 killed as a result of limit of host",
                         "[四 3月 20 21:01:25 2025] Mem-Info:") == ("kernel_oom_kill", 2)


def test_ascends_driver_errors_without_an_exception_are_the_cause() -> None:
    """CANN's runtime failing to count the NPUs, behind the engine's prefix, no Python exception (wild253's form)."""
    e = "(EngineCore pid=118)         "
    assert _signature_at(
        e + "rtGetDeviceCount execution failed, reason=driver error:internal error[FUNC:FuncErrorReason]"
            "[FILE:error_message_manage.cc][LINE:65]",
        e + "get device count failed, runtime result = 507899.[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:148]") == (
        "ascend_driver_error", 1)


def test_a_pods_eviction_in_kubectl_describes_events_is_its_end() -> None:
    """``kubectl describe pod``'s events: the kubelet evicted the pod (wild254's form)."""
    assert _signature_at(
        "Events:", "  Type     Reason     Age   From     Message", "  ----     ------     ----  ----     -------",
        "  Warning  Evicted    12m   kubelet  The node was low on resource: ephemeral-storage. Threshold quantity: 6388",
        "  Normal   Killing    12m   kubelet  Stopping container vllm-lmcache") == ("kubelet_stopped", 4)


def test_a_container_restarted_for_its_liveness_probe_is_stopped_by_the_kubelet() -> None:
    """``kubectl describe``'s events: the probe failing, then the kubelet killing the container for it (wild257's
    form)."""
    assert _signature_at(
        "  Warning  Unhealthy  25m (x3 over 25m)  kubelet  Liveness probe failed: HTTP probe failed with statuscode: 404",
        "  Normal   Killing    25m                kubelet  Container vllm-3b failed liveness probe, will be restarted"
    ) == ("probe_restart", 2)


def test_the_nvidia_drivers_xid_in_a_host_kernel_log_is_the_cause() -> None:
    """A host's kernel log collected beside the job's (Talos' ``kern: warning:``): Xid 119, the GPU's firmware not
    answering (wild258's form); Xid 45 alone (the driver cleaning up after a killed process) is no cause."""
    k = "kern: warning: [2026-04-22T21:29:21.342163186Z]: "
    assert _signature_at(k + "NVRM: _kgspLogXid119: ****",
                         k + "NVRM: Xid (PCI:0000:0b:00): 119, pid=11431, name=gpu-feature-dis, Timeout after 45s of "
                             "waiting for RPC response from GPU3 GSP!") == ("nvrm_xid", 2)
    assert not analyze_bytes(_log(k + "NVRM: Xid (PCI:0000:0b:00): 45, pid=11431, name=python3, Ch 00000008")).failed


def test_sglangs_warm_up_request_failing_in_its_handler_fails_the_start() -> None:
    """Guard: SGLang's OpenAI request handler (``serving_base.py ... handle_request``) failing on the warm-up
    request, then SGLang's ``Initialization failed. warmup error``: the handler's exception is the cause."""
    a = analyze_bytes(_log(
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/entrypoints/openai/serving_base.py", line 107, in handle_request',
        "    return await self._handle_non_streaming_request(",
        "RuntimeError: NPU function error: call aclnnInplaceCopy failed, error code is 161002",
        "[2026-06-09 03:35:23] Initialization failed. warmup error: Traceback (most recent call last):",
        '  File "/x/sglang/srt/entrypoints/http_server.py", line 1400, in _execute_server_warmup',
        "    assert res.status_code == 200, f\"{res.text}\"",
        'AssertionError: {"object":"error","message":"Internal server error: NPU function error"}'))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "RuntimeError"


def test_a_lone_exception_line_of_a_module_of_exceptions_ends_the_run() -> None:
    """A paste of the command, then only ``requests.exceptions.ConnectTimeout: ...`` (no header; the name does not
    end in Error) (wild265's form)."""
    a = analyze_bytes(_log("vllm serve Qwen/Qwen2.5-7B-Instruct", "",
                           "requests.exceptions.ConnectTimeout: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co',"
                           " port=443): Max retries exceeded\"))"))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "requests.exceptions.ConnectTimeout"


def test_an_invalid_device_ordinal_is_a_gpu_index_not_a_failed_kernel() -> None:
    """``CUDA error: invalid device ordinal`` names its own signature, with a hint on GPU indexes, not the failed
    kernel's (wild266's form)."""
    assert _signature_at("torch.AcceleratorError: CUDA error: invalid device ordinal") == ("invalid_device_ordinal", 1)
