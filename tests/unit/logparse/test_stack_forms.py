"""Forms found by the blind sets wild102-wild106 (session 30): crash reports in less common forms (a native
library's signal handler, faulthandler, exception groups, rich's boxes) and the jobs of inference stacks and RL
trainers around vLLM.  Every text here is written for the test, in the forms the real logs showed."""

from __future__ import annotations

import re

import pytest

from orchestrator.logparse import analyze_bytes


def _as(text: str, endings: str) -> bytes:
    return (text if endings == "stored" else re.sub(r"\r\n?", "\n", text)).encode()


UCX_CRASH = (
    "[2025-05-27 23:56:41] Prefill batch. #new-seq: 1, #new-token: 64, #cached-token: 0, token usage: 0.00\n"
    "[node-7:1896790:0:1898637] Caught signal 11 (Segmentation fault: invalid permissions for mapped object at "
    "address 0x7f32b6020000)\n"
    "==== backtrace (tid:1898637) ====\n"
    " 0  /env/lib/nixl.libs/libucs-97f10f8d.so.0.0.0(ucs_handle_error+0x294) [0x7f32f5fadba4]\n"
    " 1  /env/lib/nixl.libs/libuct-b36f5a30.so.0.0.0(uct_tcp_ep_am_bcopy+0x8a) [0x7f36fe03504a]\n"
    "=================================\n"
    "Fatal Python error: Segmentation fault\n"
    "\n"
    "Thread 0x00007f25c52fe640 (most recent call first):\n"
    '  File "/env/lib/python3.10/threading.py", line 324 in wait\n'
    '  File "/env/lib/python3.10/threading.py", line 973 in _bootstrap\n'
    "\n"
    "[2025-05-27 23:56:43] Child process unexpectedly failed with an exit code 139. pid=1896790\n"
)


@pytest.mark.parametrize("endings", ["stored", "normalised"])
def test_a_native_librarys_caught_signal_is_the_cause_before_faulthandlers_report(endings: str) -> None:
    """UCX's handler says what crashed (and its backtrace where); Python's faulthandler after it says only that
    the process died of it."""
    a = analyze_bytes(_as(UCX_CRASH, endings))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.signature == "native_signal_caught"
    assert "Caught signal 11 (Segmentation fault" in a.root_cause.message
    assert a.root_cause.line_no == 2


ACTOR = "(ActorModelRayActor pid=348952) "
CUMEM_OOM = (
    "Train epoch [1/1]: 100%|##########| 8/8 [02:00<00:00, 15.12s/it, pg=0.319, rm=0.163]\n"
    "(LLMRayActor pid=347862) CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n"
    f"{ACTOR}\n"
    "Episode [1/16]:   0%|          | 0/309 [03:58<?, ?it/s]\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
    "    return _run_code(code, main_globals, None,\n"
    '  File "/srv/openrlhf/cli/train_ppo_ray.py", line 478, in <module>\n'
    "    train(args)\n"
)


def test_vllms_sleep_mode_allocator_running_out_of_memory_is_the_cause_of_a_cut_traceback() -> None:
    """vLLM's cumem allocator (sleep mode: an RL trainer waking the engine up) reports CUDA's out-of-memory in
    its own words; the driver's traceback after it is cut before its exception line."""
    a = analyze_bytes(CUMEM_OOM.encode())
    assert a.failed and a.root_cause is not None
    assert a.root_cause.signature == "cumem_oom"
    assert a.root_cause.message.startswith("CUDA Error: out of memory at")
    assert a.root_cause.process == "LLMRayActor"


def test_a_server_whose_wake_up_ran_out_of_memory_and_then_stopped_in_order_did_not_fail() -> None:
    """The allocator's line is an error the server lived with: the wake-up call failed (answered 500), and the
    server was then shut down in order."""
    api, core = "(APIServer pid=47967) ", "(EngineCore pid=48200) ERROR 06-02 14:31:01 [core.py:1365] "
    text = (
        f"{api}INFO 06-02 13:34:56 [api_router.py:39] wake up the engine with tags: None\n"
        f'{api}INFO:     127.0.0.1:51530 - "POST /wake_up HTTP/1.1" 200 OK\n'
        f'{api}INFO:     127.0.0.1:51530 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        f"{api}INFO 06-02 14:31:00 [api_router.py:39] wake up the engine with tags: None\n"
        "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:139\n"
        f"{core}Invocation of wake_up method failed\n"
        f"{core}Traceback (most recent call last):\n"
        f'{core}  File "/env/vllm/v1/engine/core.py", line 751, in wake_up\n'
        f"{core}    self.model_executor.wake_up(tags)\n"
        f"{core}RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:139\n"
        f'{api}INFO:     127.0.0.1:37006 - "POST /wake_up HTTP/1.1" 500 Internal Server Error\n'
        f"{api}INFO:     Shutting down\n"
        f"{api}INFO:     Waiting for application shutdown.\n"
        f"{api}INFO:     Application shutdown complete.\n"
    )
    a = analyze_bytes(text.encode())
    assert not a.failed
    assert "cumem_oom" in {s.id for s in a.signatures}


def test_a_cuda_error_an_extensions_check_reports_is_the_cause_before_the_apps_echo() -> None:
    """flash-attention's check (``CUDA error (file.h:188): invalid argument``) reports what failed; the app's
    loguru record after it repeats only vLLM's symptom."""
    text = (b"CUDA error (/build/flash-attention/hopper/flash_fwd_launch_template.h:188): invalid argument\n\n"
            b"2025-12-06 05:57:11.935 | ERROR | app.cli.fast_api:parse_pdf:306 - Engine core initialization failed. "
            b"See root cause above. Failed core proc(s): {}\n")
    a = analyze_bytes(text)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("cuda_error_at", 1)
    assert a.root_cause.message.endswith("flash_fwd_launch_template.h:188): invalid argument")


CUT_AFTER_BAR = (
    "Model Responding: 100%|##########| 900/900 [1:46:50<00:00,  7.12s/it]\n"
    "Postprocessing:   0%|          | 0/900 [00:00<?, ?it/s]Traceback (most recent call last):\n"
    '  File "/env/lib/python3.10/site-packages/tenacity/__init__.py", line 470, in __call__\n'
    "    result = fn(*args, **kwargs)\n"
    '  File "/env/lib/python3.10/site-packages/lmms_eval/api/task.py", line 1470, in process_results\n'
    "    results = [res.strip() for res in results]\n"
    '  File "/env/lib/python3.10/s'
)


@pytest.mark.parametrize("glued", [True, False])
def test_a_cut_traceback_with_nothing_above_says_where_it_was_cut(glued: bool) -> None:
    """A paste that ends inside a traceback names no exception; its message says so, and where it was cut (the
    last whole frame and its source line), not the progress bar its header was glued to."""
    text = CUT_AFTER_BAR if glued else CUT_AFTER_BAR.replace("0/900 [00:00<?, ?it/s]Traceback", "0/900\nTraceback")
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None and a.root_cause.exception is None
    assert a.root_cause.message == ("cut before its exception line; last frame task.py:1470, in process_results: "
                                    "results = [res.strip() for res in results]")


@pytest.mark.parametrize("where", ["LLMEngine.__del__", "TCPStore.__del__"])
def test_an_exception_python_ignored_at_exit_is_not_a_failure(where: str) -> None:
    """``Exception ignored in: <function X.__del__>`` and its traceback: Python printed an exception it could not
    raise (a finaliser, at interpreter exit) and went on; the job had done its work."""
    text = (
        "Processed prompts: 100%|##########| 4/4 [00:02<00:00,  1.71it/s]\n"
        "Prompt: 'Hello, my name is', Generated text: ' Joel'\n"
        f"Exception ignored in: <function {where} at 0xfffda85337f0>\n"
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.10/site-packages/vllm/engine/llm_engine.py", line 501, in __del__\n'
        '  File "/env/lib/python3.10/site-packages/vllm/executor/multiproc_worker_utils.py", line 139, in close\n'
        "AttributeError: 'NoneType' object has no attribute 'info'\n"
        "/env/lib/python3.10/multiprocessing/resource_tracker.py:224: UserWarning: resource_tracker: There appear "
        "to be 1 leaked shared_memory objects to clean up at shutdown\n"
    )
    a = analyze_bytes(text.encode())
    assert not a.failed
    assert "exception_ignored" in {s.id for s in a.signatures}


ASGI_CANCELLED = (
    "INFO:     Uvicorn running on http://0.0.0.0:5002 (Press CTRL+C to quit)\n"
    'INFO:     52.0.25.199:43684 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    "ERROR:    Exception in ASGI application\n"
    "Traceback (most recent call last):\n"
    '  File "/env/lib/python3.10/site-packages/starlette/responses.py", line 234, in listen_for_disconnect\n'
    "    message = await receive()\n"
    '  File "/env/lib/python3.10/asyncio/locks.py", line 214, in wait\n'
    "    await fut\n"
    "asyncio.exceptions.CancelledError: Cancelled by cancel scope 7fd214489990\n"
    "\n"
    "During handling of the above exception, another exception occurred:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/env/lib/python3.10/site-packages/anyio/_backends/_asyncio.py", line 678, in __aexit__\n'
    "    raise BaseExceptionGroup(\n"
    "exceptiongroup.ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
    "INFO 01-27 01:18:46 llm_engine.py:871] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 19.6 "
    "tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs\n"
)


def test_a_request_cancelled_under_a_task_group_is_one_requests_error_not_a_stop() -> None:
    """A client that went away cancels its handler's task: uvicorn prints the ``CancelledError`` and the task
    group's ``ExceptionGroup`` it became, and the server serves on (a throughput line after it)."""
    a = analyze_bytes(ASGI_CANCELLED.encode())
    assert not a.failed
    assert a.errors == 1


def test_faulthandlers_crash_report_is_the_cause_of_the_watchdog_timeout_it_led_to() -> None:
    """A TP worker dies in native code (faulthandler's report, nothing above it saying why); the scheduler's
    watchdog fires five minutes later on the other ranks: the crash is the cause, the timeout its consequence."""
    text = (
        "[2025-03-07 11:51:22 TP0] Prefill batch. #new-seq: 1, #new-token: 2176, #cached-token: 0, #running-req: 10\n"
        "Fatal Python error: Segmentation fault\n"
        "\n"
        "Thread 0x00007fb5735f7700 (most recent call first):\n"
        '  File "/env/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 462 in watchdog_thread\n'
        "\n"
        "Current thread 0x00007fb573df8700 (most recent call first):\n"
        '  File "/env/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py", line 2501 in all_reduce\n'
        "\n"
        "Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)\n"
        "[2025-03-07 11:56:43 TP2] Watchdog timeout (self.watchdog_timeout=300)\n"
        "[2025-03-07 11:56:43 TP4] Watchdog timeout (self.watchdog_timeout=300)\n"
        "[2025-03-07 11:56:48] Received sigquit from a child proces. It usually means the child failed.\n"
    )
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("python_fatal_error", 2)


def test_a_signal_caught_in_nccl_is_the_cause_of_the_gloo_errors_of_the_other_ranks() -> None:
    """One rank segfaults inside NCCL (UCX's handler reports it, indented as pasted); the other ranks' gloo
    transport then raises ``Connection closed by peer``: a consequence, not the cause."""
    text = (
        "  Caught signal 11 (Segmentation fault: address not mapped to object at address 0x3)\n"
        "  0 0x0000000000042520 __sigaction()  ???:0\n"
        " 12 0x0000000000044b36 ncclAllGather()  /build/nccl/src/collectives.cc:26\n"
        "[2025-03-07 11:56:43 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/env/sglang/srt/managers/scheduler.py", line 1999, in run_scheduler_process\n'
        "    scheduler.event_loop_overlap()\n"
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
        "[127.0.0.1]:26496\n"
        "\n"
        "[2025-03-07 11:56:48] Received sigquit from a child proces. It usually means the child failed.\n"
    )
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("native_signal_caught", 1)
    assert "gloo_peer_closed" in {s.id for s in a.signatures}


def test_rocms_device_side_assertion_quoted_the_old_way_is_the_cause() -> None:
    """ROCm's kernels quote the failed condition as ``...'`` (a backtick, then a quote), CUDA's as ``...```."""
    worker = "(RayWorkerVllm pid=343836) "
    text = (
        f"{worker}/pytorch/aten/src/ATen/native/hip/IndexKernel.hip:94: operator(): Device-side assertion "
        "`-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"' failed.\n"
    ) * 3 + f"{worker}:0:rocdevice.cpp            :2984: 8497734283 us: Callback: Queue aborting with error\n"
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("device_assert", 1)


@pytest.mark.parametrize("report", [
    "[1]    3100846 segmentation fault (core dumped)  python benchmarks/benchmark_throughput.py -tp 2",  # zsh's job
    "[1]+  Segmentation fault      (core dumped) python benchmarks/benchmark_throughput.py -tp 2",  # bash's job
    "zsh: segmentation fault  python benchmarks/benchmark_throughput.py -tp 2",  # zsh, in the foreground
])
def test_a_shells_report_of_a_job_that_crashed_is_the_cause(report: str) -> None:
    """The job's interpreter died of a signal after an exception Python ignored at exit: the shell's line is the
    only word of it, and the run failed."""
    text = (
        "2024-07-28 22:30:36,078 INFO compiled_dag_node.py:1202 -- Tearing down compiled DAG\n"
        "Exception ignored in: <function RayGPUExecutor.__del__ at 0x7ff2ee7048b0>\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/vllm/executor/ray_gpu_executor.py", line 396, in __del__\n'
        "    self.forward_dag.teardown()\n"
        "AttributeError: 'Worker' object has no attribute 'core_worker'\n"
        f"{report}\n"
    )
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("shell_killed", 7)


def test_rays_report_of_an_actor_that_died_after_its_device_assert_is_the_asserts_symptom() -> None:
    """A Ray worker's kernel asserts, the worker aborts, and the driver's ``ray.get`` raises ``RayActorError``
    ("The actor died unexpectedly"): the assert is why it died."""
    worker = "(RayWorkerVllm pid=343836) "
    text = (
        f"{worker}/pytorch/aten/src/ATen/native/hip/IndexKernel.hip:94: operator(): Device-side assertion "
        "`-sizes[i] <= index && index < sizes[i]' failed.\n"
        f"{worker}*** SIGABRT received at time=1703062736 on cpu 54 ***\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/bench/offline.py", line 40, in <module>\n'
        "    outputs = llm.generate(prompts, sampling_params)\n"
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: RayWorkerVllm\n"
    )
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("device_assert", 1)
    alone = analyze_bytes(text.split("\n", 2)[2].encode())  # with nothing above, the death is what is known
    assert alone.root_cause is not None and alone.root_cause.signature == "ray_worker_crashed"


@pytest.mark.parametrize(("frame", "rest"), [
    ('  File "/srv/sglang/srt/configs/model_config.py", line 462, in maybe_pull_model_tokenizer_from_r', "emote"),
    ('  File "/env/lib/python3.10/site-packages/uvicorn/server.py", line 1', "066, in run_server"),
])
def test_a_frame_line_a_terminal_wrapped_does_not_end_the_traceback(frame: str, rest: str) -> None:
    """A terminal's copy cuts a long frame line at its width: the row after it, at column 0, is the rest of the
    frame, not the exception line."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/sglang/srt/managers/scheduler.py", line 2631, in run_scheduler_process\n'
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)\n"
        f"{frame}\n{rest}\n"
        "    client = create_remote_connector(self.model_path)\n"
        "ModuleNotFoundError: No module named 'boto3'\n"
    )
    a = analyze_bytes(text.encode())
    assert a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message) == ("ModuleNotFoundError", "No module named 'boto3'")


def test_a_syntax_error_with_no_source_line_still_ends_its_traceback() -> None:
    text = ('Traceback (most recent call last):\n  File "/srv/run.py", line 3, in <module>\n    exec(code)\n'
            '  File "<string>", line 1\nSyntaxError: invalid syntax\n')
    a = analyze_bytes(text.encode())
    assert a.root_cause is not None and a.root_cause.exception == "SyntaxError"


def test_a_traceback_uvicorn_announced_is_one_requests_even_in_a_paste_that_starts_while_serving() -> None:
    """``Exception in ASGI application`` only happens while a server answers a request: the traceback after it
    is that request's error, whether or not the paste shows the server coming up."""
    text = ASGI_CANCELLED.split("\n", 2)[2].replace(
        "INFO 01-27 01:18:46 llm_engine.py:871] Avg prompt throughput",
        "INFO 02-01 04:31:38 async_llm_engine.py:111] Finished request cmpl-dc7fb40d.\nINFO 01-27 01:18:46 "
        "llm_engine.py:871] Avg prompt throughput")
    assert text.startswith("ERROR:    Exception in ASGI application")
    a = analyze_bytes(text.encode())
    assert not a.failed and a.errors == 1


def test_an_engines_echo_of_a_workers_error_says_more_than_the_workers_frames_cut_from_the_paste() -> None:
    """The workers' records hold only frame lines (the reporter cut their exception lines: ``...``); the engine's
    ``Worker failed with error '...'`` quotes what failed."""
    core = "ERROR 06-13 15:32:09 [core.py:515] "
    worker = "(VllmWorker rank=1 pid=3350867) ERROR 06-13 15:32:09 [multiproc_executor.py:527] "
    text = (
        f"{core}EngineCore failed to start.\n"
        f"{core}Traceback (most recent call last):\n"
        f'{core}  File "/srv/vllm/v1/executor/multiproc_executor.py", line 207, in get_response\n'
        f"{core}    raise RuntimeError(\n"
        f"{core}RuntimeError: Worker failed with error 'Expected result >= 0 to be true, but got false.', please "
        "check the stack trace above for the root cause\n"
        f'{worker}  File "/srv/vllm/compilation/cuda_piecewise_backend.py", line 156, in __call__\n'
        f"{worker}    return entry.runnable(*args)\n"
        "...\n"
    )
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.signature) == ("RuntimeError", "worker_failed_echo")
    assert "Expected result >= 0" in a.root_cause.message


def test_glibcs_heap_abort_in_a_ray_worker_is_the_cause_of_its_death() -> None:
    worker = "(RayWorkerWrapper pid=336, ip=127.0.0.1) "
    text = (
        f"{worker}free(): double free detected in tcache 2\n"
        f"{worker}*** SIGABRT received at time=1743139179 on cpu 162 ***\n"
        f"{worker}Fatal Python error: Aborted\n"
        "ERROR 03-27 22:19:40 [core.py:367] Traceback (most recent call last):\n"
        'ERROR 03-27 22:19:40 [core.py:367]   File "/srv/vllm/executor/ray_utils.py", line 90, in execute\n'
        "ERROR 03-27 22:19:40 [core.py:367]     return ray.get(refs)\n"
        "ERROR 03-27 22:19:40 [core.py:367] ray.exceptions.ActorDiedError: The actor died unexpectedly before "
        "finishing this task.\n"
    )
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("glibc_heap_abort", 1)


GROUP = (
    "  + Exception Group Traceback (most recent call last):\n"
    '  |   File "/env/lib/python3.12/site-packages/vllm/entrypoints/openai/api_server.py", line 1887, in run_server\n'
    "  |     async with asyncio.TaskGroup() as tg:\n"
    "  |                ^^^^^^^^^^^^^^^^^^^\n"
    '  |   File "/usr/lib/python3.12/asyncio/taskgroups.py", line 145, in __aexit__\n'
    "  |     raise me from None\n"
    "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
    "  +-+---------------- 1 ----------------\n"
    "    | Traceback (most recent call last):\n"
    '    |   File "/env/lib/python3.12/site-packages/vllm/v1/engine/core_client.py", line 512, in __init__\n'
    "    |     self._wait_for_engine_startup()\n"
    "    | RuntimeError: Engine core initialization failed. See root cause above.\n"
    "    +------------------------------------\n"
)


@pytest.mark.parametrize("endings", ["stored", "normalised"])
def test_an_exception_groups_report_is_read_without_its_gutters(endings: str) -> None:
    """Python 3.11+ prints a task group's failure with ``|`` gutters and rules between its parts: the part's
    exception is what failed, not the group that carried it."""
    worker = "(EngineCore_DP0 pid=811) ERROR 08-01 01:16:47 [core.py:700] "
    text = (f"{worker}Traceback (most recent call last):\n"
            f'{worker}  File "/env/vllm/v1/worker/gpu_worker.py", line 212, in load_model\n'
            f"{worker}ValueError: The checkpoint has model type `kimi_k25` but Transformers does not recognize it\n"
            + GROUP)
    a = analyze_bytes(_as(text, endings))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process) == ("ValueError", "EngineCore_DP0")
    alone = analyze_bytes(_as(GROUP, endings))
    assert alone.root_cause is not None and alone.root_cause.exception == "RuntimeError"
    assert alone.root_cause.message == "Engine core initialization failed. See root cause above."


def test_one_requests_exception_group_is_that_requests_error() -> None:
    text = ("ERROR:    Exception in ASGI application\n"
            + GROUP.replace("RuntimeError: Engine core initialization failed. See root cause above.",
                            "AttributeError: 'bytes' object has no attribute 'get'"))
    a = analyze_bytes(text.encode())
    assert not a.failed and a.errors == 1
    assert a.root_cause is not None and a.root_cause.exception == "AttributeError"


def test_ranks_that_terminate_at_once_still_name_what_was_thrown() -> None:
    """Two ranks' C++ ``terminate`` written into each other (wild120, session 31): the type is the first one's,
    the message the ``what()`` line's without the other ranks' ``what():``."""
    text = ("(Worker_TP3_EP3 pid=141118) For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "terminate called after throwing an instance of 'c10::AcceleratorErrorterminate called after throwing an "
            "instance of ''\n"
            "c10::AcceleratorErrorterminate called after throwing an instance of ''\n"
            "c10::AcceleratorError'\n"
            "  what():    what():    what():  CUDA error: an illegal memory access was encountered\n")
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and rc.exception == "c10::AcceleratorError"
    assert rc.message == "CUDA error: an illegal memory access was encountered"


def test_an_asyncio_callbacks_exception_the_loop_logged_is_no_failure() -> None:
    """asyncio's default handler logs ``Exception in callback X`` with its traceback and the loop goes on (a task
    cancelled at exit, wild120)."""
    text = ("[2025-09-18 09:25:53] ERROR base_events.py:1758: Exception in callback Backend.done_callback(<Task "
            "cancelled>) at /src/art/local/backend.py:278\n"
            "handle: <Handle Backend.done_callback(<Task cancelled>) at /src/art/local/backend.py:278>\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/asyncio/events.py", line 80, in _run\n'
            "    self._context.run(self._callback, *self._args)\n"
            "asyncio.exceptions.CancelledError\n"
            "wandb: Find logs at: wandb/run-20250918_092333/logs\n")
    assert not analyze_bytes(text.encode()).failed
