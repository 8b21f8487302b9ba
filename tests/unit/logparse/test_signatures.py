"""The signature catalogue: data, not code.  Adding a signature = a TOML entry + one EXAMPLES line here."""

from __future__ import annotations

import pytest

from orchestrator.logparse import Severity, load_catalogue, parse_catalogue, signature_hint
from orchestrator.logparse.funnel import build_funnel
from orchestrator.logparse.signatures import CatalogueError

from .conftest import parse_all

REQUIRED = {"cuda_oom", "kv_cache_memory", "nccl_error", "worker_exception", "worker_died", "engine_dead",
            "engine_init_failed", "parent_exited", "worker_shutdown", "broadcast_wait", "empty_error",
            "block_hasher_missing", "sample_tokens_order", "hs_write_failed"}

# One real-looking line per signature (prefix-stripped message text).
EXAMPLES = {
    "ray_placement_timeout": ("ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0}, "
                              "{'GPU': 1.0}] within 1800 seconds. See `ray status` and `ray list nodes`"),
    "disk_full": "OSError: [Errno 28] No space left on device: '/srv/hf-cache/hub/tmpx1'",
    "vllm_not_installed": "ModuleNotFoundError: No module named 'vllm'",
    "slurm_time_limit": "slurmstepd: error: *** JOB 4402 ON gpu-n7 CANCELLED AT 2026-12-04T10:00:00 DUE TO TIME LIMIT ***",
    "triton_out_of_resource": ("torch._inductor.exc.InductorError: RuntimeError: No valid triton configs. "
                               "OutOfMemoryError: out of resource: triton_tem_fused_0 Required: 107008 Hardware "
                               "limit:101376 Reducing block sizes or `num_stages` may help."),
    "job_aborted": "ERROR: step 'extract' failed after 2 tries. Aborting pipeline.",
    "libcuda_not_linkable": "/usr/bin/ld: cannot find -lcuda: No such file or directory",
    "cuda_driver_error": "[torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/utils.h func=cu_mem_create",
    "tgi_warmup_failed": ("ERROR warmup{max_prefill_tokens=31000}:warmup: text_generation_router_v3::client: "
                          "backends/v3/src/client/mod.rs:45: Server error: Not enough memory to handle 31000 prefill tokens."),
    "ggml_cuda_oom": ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 81656.95 MiB on device 0: cudaMalloc "
                      "failed: out of memory"),
    "ggml_abort": "[46009] /home/u/llama.cpp/ggml/src/ggml-cuda/fattn.cu:579: fatal error",
    "ascend_driver_error": ("rtGetDeviceCount execution failed, reason=driver error:internal error"
                            "[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:65]"),
    "kubelet_stopped": "  Warning  Evicted  12m  kubelet  The node was low on resource: ephemeral-storage.",
    "nvrm_xid": ("NVRM: Xid (PCI:0000:0b:00): 119, pid=11431, name=gpu-feature-dis, Timeout after 45s of waiting for "
                "RPC response from GPU3 GSP!"),
    "probe_restart": "  Normal   Killing    25m   kubelet  Container vllm failed liveness probe, will be restarted",
    "invalid_device_ordinal": "torch.AcceleratorError: CUDA error: invalid device ordinal",
    "ptxas_failed": "ptxas /tnp/tmpbc993top.ptx, line 113; fatal   : Parsing error near '.': syntax error",
    "cuda_no_kernel_image": "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    "stop_signal_received": "*** SIGTERM received at time=1751302847 on cpu 14 ***",
    "native_check_failed": ("[2025-09-02 11:02:13,448 C 88121 88190] core_worker.cc:842:  Check failed: "
                            "actor_handle != nullptr Actor handle not found"),
    "cuda_oom": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "startup_free_memory": "ValueError: Free memory on device cuda:0 (1.2/94.9 GiB) on startup is less than "
                           "desired GPU memory utilization (0.9, 85.4 GiB).",
    "kv_cache_memory": "ValueError: No available memory for the cache blocks. Try increasing "
                       "`gpu_memory_utilization` when initializing the engine.",
    "nccl_error": "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    "worker_exception": "WorkerProc hit an exception.",
    "worker_failed_echo": "RuntimeError: Worker failed with error 'boom', please check the stack trace above "
                          "for the root cause",
    "worker_died": "Worker proc VllmWorker-0 died unexpectedly (exit code: 0), shutting down executor.",
    "engine_dead": "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
                   "trace (above) for the root cause.",
    "executor_failed": "RuntimeError: Executor failed.",
    "engine_init_failed": "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
                          "proc(s): {'EngineCore': 1}",
    "parent_exited": "Parent process exited, terminating worker queues",
    "worker_shutdown": "WorkerProc shutting down.",
    "broadcast_wait": "No available shared memory broadcast block found in 60 seconds. This typically happens "
                      "when some processes are hanging or doing some time-consuming work.",
    "rpc_timeout": "TimeoutError: RPC call to execute_model timed out.",
    "empty_error": "ERROR: ",
    "block_hasher_missing": "    assert len(request.block_hashes) >= num_full_blocks",
    "sample_tokens_order": "RuntimeError: sample_tokens() must be called after execute_model() returns None.",
    "tensor_bool_ambiguous": "RuntimeError: Boolean value of Tensor with more than one value is ambiguous",
    "hs_write_failed": "Hidden-states write failed for req_id=cmpl-1: RuntimeError('pin_memory=True requires "
                       "a CUDA or other accelerator backend')",
    "client_aborted": "Aborting: 5 consecutive samples errored out. The vLLM server may be unreachable.",
    "sample_skipped": "Skipping sample 17 due to error: ReadTimeout",
    "request_error": "Exception caught. Request id: None",
    "cpp_terminate": "terminate called after throwing an instance of 'c10::Error'",
    "cuda_error": "CUDA error: an illegal memory access was encountered",
    "cuda_ecc_error": "RuntimeError: CUDA error: uncorrectable ECC error encountered",
    "exec_format_error": "exec /usr/local/bin/python3: exec format error",
    "wrapper_start_failed": "vLLM failed to start.  Retry with --enable-serving-output to learn more about the failure.",
    "cuda_runtime_oom": "torch.AcceleratorError: CUDA error: out of memory",
    "device_assert": "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: "
                     "[5,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.",
    "cli_usage_error": "vllm serve: error: unrecognized arguments: --num-speculative-tokens 3",
    "zmq_socket_closed": "zmq.error.ZMQError: Operation not supported",
    "shell_killed": "run.sh: line 12: 48213 Killed                  python -m vllm.entrypoints.openai.api_server",
    "ray_gpus_short": "The number of required GPUs exceeds the total number of available GPUs in the placement "
                      "group.",
    "elastic_rank_signal": "  traceback : Signal 9 (SIGKILL) received by PID 3942775",
    "k8s_oom_killed": "      Reason:       OOMKilled",
    "k8s_crash_loop": "pod/vllm-server-5c87fbcddb-cg6q2   0/1     CrashLoopBackOff   216 (4m3s ago)   18h",
    "ray_oom_killed": ("Task was killed due to the node running low on memory. Memory on the node (IP: 127.0.0.1, "
                       "ID: 8a1f) where the task was running was 61.2GB / 64.0GB (0.956), which exceeds the memory "
                       "usage threshold of 0.95."),
    "ray_job_failed": ("Status message: Job entrypoint command failed with exit code 1, last available logs "
                       "(truncated to 20,000 chars):"),
    "ray_worker_crashed": "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
                          "Worker exit detail: Worker unexpectedly exits with a connection error code 2.",
    "sglang_watchdog_timeout": "[2025-10-29 11:25:58 TP3] Watchdog timeout (self.watchdog_timeout=300)",
    "recipe_failed": "[eorch] result: FAILED: extract: vLLM server died (exit code 1)",
    "fa_version_unsupported": "Cannot use FA version 2 is not supported due to FA2 is only supported on devices "
                              "with compute capability >= 8",
    "sglang_detokenizer_unresponsive": ("Health check failed. Server couldn't get a response from detokenizer for "
                                        "last 20 seconds. tic start time: 09:32:31. last_heartbeat time: 09:32:31"),
    "sglang_child_failed": "Received sigquit from a child process. It usually means the child failed.",
    "killed": "killed (SIGKILL; OOM killer?)",
    "sglang_rank_signalled": "[2026-02-11 08:14:02] Exit code: -9",
    "connection_refused": "ConnectionRefusedError: [Errno 111] Connection refused",
    "rust_panic": "thread 'main' panicked at src/router.rs:589:79:",
    "sglang_step_caught": "Exception in ModelRpcClient:",
    "asyncio_callback_exception": "Exception in callback LocalBackend._prepare.<locals>.done_callback(<Task cancelled>)",
    "oom_killed": "killed by the kernel's OOM killer (Killed process 7899 (python) total-vm:26184840kB)",
    "gpu_xid": "killed (SIGKILL) — GPU Xid 79 (fell off the bus) on PCI:0000:44:00",
    "engine_start_failed_echo": "Exception: WorkerProc initialization failed due to an exception in a background "
                                "process. See stack trace for root cause.",
    "aborted": "aborted (SIGABRT)",
    "killed_while_stopping": ("killed (SIGKILL) while stopping: the log shows a stop first, then the shutdown "
                              "outlived a grace period (docker stop, systemd, Slurm's KillWait) or a kill -9 came"),
    "stopped_by_signal": "stopped by SIGTERM (a kill, a scheduler's stop or cancel)",
    "pytest_failed": "FAILED tests/v1/test_spec_decode.py::test_ngram[cfg1] - AssertionError: acceptance too low",
    "plugin_load_failed": "Failed to load plugin register_dummy_model",
    "kv_cache_max_len": "The model's max seq len (29000) is larger than the maximum number of tokens that can be "
                        "stored in KV cache (23648). Try increasing `gpu_memory_utilization`",
    "model_type_unknown": "Value error, The checkpoint you are trying to load has model type `glm4v_moe` but "
                          "Transformers does not recognize this architecture.",
    "ray_node_dead": "The node with node id: 0f21 and address: node-7 and node name: node-7 has been marked "
                     "dead because the detector has missed too many heartbeats from it.",
    "raylet_unreachable": ("raylet_client.cc:60: Could not connect to socket "
                           "/data/ray/session_2025-01-31_21-33-56_370352_2880738/sockets/raylet.1"),
    "c10d_store_timeout": ("[c10d] waitForInput: socket SocketImpl(fd=103, addr=[::ffff:127.0.0.1]:52362, "
                           "remote=[::ffff:127.0.0.1]:5000) timed out after 1800000ms"),
    "sglang_watchdog_dump": "self.cur_batch.batch_size()=1",
    "pytest_error": "_____________ ERROR at setup of test_single_request[True-org/model] _____________",
    "go_panic": "panic: runtime error: invalid memory address or nil pointer dereference",
    "llm_init_failed": "AttributeError: 'LLM' object has no attribute 'llm_engine'",
    "nvshmem_init_failed": "NVSHMEM API called before NVSHMEM initialization has completed",
    "hip_runtime_failed": "hip runtime failed to load.",
    "rocm_gpu_fault": "HW Exception by GPU node-6 (Agent handle: 0x602106c068c0) reason :GPU Hang",
    "pipe_closed": "EOFError",
    "port_in_use": ("ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already "
                    "in use"),
    "container_hook_failed": ("docker: Error response from daemon: failed to create task for container: failed to create "
                              "shim task: OCI runtime create failed: runc create failed: unable to start container "
                              "process: error during container init: error running hook #0: error running hook: exit "
                              "status 1, stdout: , stderr: Auto-detected mode as 'legacy'"),
    "container_start_failed": ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update "
                               "your driver to a newer version, or use an earlier cuda container: unknown."),
    "cuda_check_failed": "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'",
    "server_start_failed": ("2024-07-01 07:28:04.488 1 kserve ERROR [__main__.py:<module>():254] Failed to start "
                            "model server: integer division or modulo by zero"),
    "notebook_run_failed": "papermill.exceptions.PapermillExecutionError: ",
    "json_exit_status": '{"t": "2026-09-24T11:55:42Z", "msg": "train finished", "rc": 1, "run_dir": "/srv/runs/e31"}',
    "llvm_fatal": "LLVM ERROR: Unsupported rounding mode for conversion.",
    "engine_process_died": "ERROR 12-06 14:09:37 client.py:282] RuntimeError('Engine process (pid 16470) died.')",
    "server_exited_echo": "Exception: Server process exited with code -9. Check server logs for errors.",
    "process_exited": "0s0n9esxgd0u45[error]worker exited with exit code 136",
    "elastic_child_failed": "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "runner_failed": "Runner failed with exception: Runner has been initializing for too long: 300 seconds",
    "input_dump": "Dumping input data for V1 LLM engine (v0.11.0) with config: model='/models/q', tensor_parallel_size=4",
    "tool_call_unparsed": "ERROR 06-02 10:00:00 [hermes_tool_parser.py:110] Error in extracting tool call from response.",
    "hf_gated_repo": "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-chat-hf/resolve/main/config.json.",
    "tool_call_stream_unparsed": "ERROR 02-19 10:00:00 hermes_tool_parser.py:337] Error trying to handle streaming tool call.",
    "rpc_cancelled": "RuntimeError: cancelled",
    "monitor_lost_process": "psutil.NoSuchProcess: process no longer exists (pid=4089031)",
    "rocm_runtime_abort": (":0:rocdevice.cpp            :3582: 1886160784284 us:  Callback: Queue 0x7d0834200000 "
                           "Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed"),
    "python_fatal_error": "Fatal Python error: Aborted",
    "sglang_child_exited": "[2026-02-14 10:20:36] Child process unexpectedly failed with exitcode=9. pid=936929",
    "npu_inner_error_echo": ("RuntimeError: The Inner error is reported as above. The process exits for this inner "
                             "error, and the current working operator name is aclnnRmsNorm."),
    "cann_error": "[Error]: The aicore execution times out.",
    "command_not_found": "/var/spool/slurmd/job152421/slurm_script: line 12: conda: command not found",
    "pip_install_failed": "ERROR: Cannot install vllm because these package versions have conflicting dependencies.",
    "wheel_unsupported": "ERROR: vllm-0.8.5+cu118-cp38-abi3-manylinux1_x86_64.whl is not a supported wheel on this platform.",
    "build_configure_failed": "CMake Error at CMakeLists.txt:3 (project):",
    "critical_record": "CRITICAL 11-12 21:18:52 lau",
    "rust_main_error": 'Error: "failed to start: PVD vector coordinator health check failed after 30 retries"',
    "python_module_missing": ("/usr/bin/python3: Error while finding module specification for 'eagle.ge_data.allocation' "
                              "(ModuleNotFoundError: No module named 'eagle.ge_data')"),
    "hccl_no_connection": ("[ERROR] HCCL(747049,):2026-06-05-03:43:35.946.209 [rank_info_detect.cc:199][754710]"
                           "[SetupRankInfoDetectService]Failed, exception caught:Internal exception: no rank "
                           "connection success"),
    "triton_model_load_failed": "failed to load 'vllm_model' version 1: Internal: TypeError: 'NoneType' object is "
                                "not subscriptable",
    "segfault": "segmentation fault (SIGSEGV)",
    "segfault_report": "!!!!!!! Segfault encountered !!!!!!!",
    "glibc_heap_abort": "free(): double free detected in tcache 2",
    "gloo_peer_closed": ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
                         "[127.0.0.1]:26496"),
    "cumem_oom": "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62",
    "start_timeout": "(WrappedServer) vllm-server failed to start within timeout",
    "cuda_error_at": "CUDA error (/build/flash-attention/hopper/flash_fwd_launch_template.h:188): invalid argument",
    "native_signal_caught": "[node-7:1896790:0:1898637] Caught signal 11 (Segmentation fault: invalid permissions)",
    "pytest_exception": "E       AssertionError: No message received",
    "asyncio_task_exception": "Task exception was never retrieved",
    "exception_ignored": "Exception ignored in: <function LLMEngine.__del__ at 0xfffda85337f0>",
    "resource_tracker_relaunch": ("/usr/lib/python3.12/multiprocessing/resource_tracker.py:123: UserWarning: "
                                  "resource_tracker: process died unexpectedly, relaunching.  Some resources might leak."),
    "ci_step_failed": "Error: Process completed with exit code 1.",
    "kernel_oom_kill": ("[ 9794.850361] Out of memory: Killed process 108229 (vLLM::EngineCor) total-vm:249406116kB, "
                        "anon-rss:1175116kB"),
}


def test_required_ids_are_present() -> None:
    assert REQUIRED <= {s.id for s in load_catalogue().signatures}


def test_every_signature_has_an_example_here() -> None:
    """A new TOML entry without an example line fails here: add one to EXAMPLES."""
    assert {s.id for s in load_catalogue().signatures} == set(EXAMPLES)


@pytest.mark.parametrize("sig_id", sorted(EXAMPLES))
def test_example_matches_its_signature(sig_id: str) -> None:
    """Each example is recognised, with its severity, versions and a one-line hint."""
    sig = load_catalogue().by_id(sig_id)
    assert sig is not None
    assert sig.id in [s.id for s in load_catalogue().match(EXAMPLES[sig_id])]
    assert sig.versions and sig.hint and "\n" not in sig.hint
    assert sig.severity in set(Severity)
    assert signature_hint(sig_id) == sig.hint


def test_unknown_hint_is_none() -> None:
    assert signature_hint("no_such_signature") is None


def test_funnel_sees_every_funnel_needle() -> None:
    """Each needle of a funnel=true signature is found by the scanner (directly or through an atom)."""
    funnel = build_funnel(load_catalogue())
    texts = [n.text for n in funnel.needles]
    for sig in load_catalogue().signatures:
        if sig.funnel:
            for needle in sig.needles:
                assert any(t in needle.encode() for t in texts), needle


def test_examples_are_found_in_a_log_line() -> None:
    """Each example written as a 0.16 worker log line is counted by the parser."""
    for sig_id, text in EXAMPLES.items():
        line = f"(Worker_TP1 pid=3) ERROR 02-21 21:43:12 [x.py:1] {text}\n".encode()
        if sig_id == "block_hasher_missing":
            line = b"Traceback (most recent call last):\n  File \"b.py\", line 1, in f\n" + text.encode() + b"\nAssertionError\n"
        if sig_id == "empty_error":
            line = b"ERROR: \n"
        _, p = parse_all(line)
        assert sig_id in {s.id for s in p.analysis().signatures}, sig_id


def test_bad_catalogue_is_rejected() -> None:
    with pytest.raises(CatalogueError):
        parse_catalogue('[[signature]]\nid = "x"\nseverity = "fatal"\nneedles = ["a"]\npattern = "a"\nhint = "h"\n')
    with pytest.raises(CatalogueError):
        parse_catalogue('[[signature]]\nid = "x"\nseverity = "cause"\nneedles = []\npattern = "a"\nhint = "h"\n')


def test_no_needle_is_a_word_every_traceback_holds() -> None:
    """A needle is also the gate of a block of frame lines (``Catalogue.may_match``): one that nearly every
    traceback holds (``Error``) sends every run of frames the long way, line by line (the concat mix lost 12%
    to ``pytest_exception``'s ``Error`` once)."""
    common = {"Error", "Exception", "error", "exception", "Traceback", "File ", "line ", "raise "}
    assert not [(sig.id, n) for sig in load_catalogue().signatures for n in sig.needles if n in common]
