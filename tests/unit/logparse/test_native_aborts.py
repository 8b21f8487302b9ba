"""Processes that die in native code, and what their death makes others print (found by the blind sets
wild75, wild76, wild79 and wild80, session 28):

* a C++ ``terminate`` in a worker (``what():  The graph should be registered to the state``), then the
  engine's ``RuntimeError: cancelled`` from the shared-memory wait its death cancelled: the worker's is the cause,
  in the process its backtrace names (``VLLM::Worker_TP4``);
* the ROCm runtime's ``Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES``, then faulthandler's
  ``Fatal Python error: Aborted`` and its thread dumps: the runtime's abort is the cause;
* faulthandler's ``Fatal Python error: Segmentation fault`` alone fails the log;
* a GPU memory fault that kills one rank, then, well after it, the other ranks' tracebacks (gloo's ``Connection
  closed by peer``): the fault is the cause (wild76); a traceback right after a C++ ``terminate`` is the same
  failure told in Python, and names it (wild41 x01);
* an SGLang child process that exited (``Child process unexpectedly failed with exitcode=9``: SIGKILL) kills the
  server, even when a SIGTERM stops what is left of it later (wild80);
* c10's own error record (``[rank0]:[E623 13:46:28.176383770 compiler_depend.ts:429] ReshapeAndCacheOperation
  setup failed!``), glued to progress dots, is the error torch_npu's ``The Inner error is reported as above``
  points at (wild79);
* a monitoring thread's ``psutil.NoSuchProcess`` tracebacks when the processes it watched are gone (the server
  was stopped, or died of something else) are neither cause nor failure.
* a crash handler's ``!!!!!!! Segfault encountered !!!!!!!`` and the native frames under it
  (``File "<unknown>", line 0, in cuModuleLoadData``) fail the log of a start-up that printed no error
  (wild154 mc01, session 34).

Every text here is written for the test, in the forms the real logs showed.
"""

from __future__ import annotations

import pytest
from logforms import plain

from orchestrator.logparse import analyze_bytes

ENDINGS = ["stored", "plain"]


def _as(text: str, endings: str) -> bytes:
    return text.encode() if endings == "stored" else plain(text.encode())


CORE = "(EngineCore pid=63) ERROR 06-02 21:27:57 [core.py:1165] "
CANCELLED = (
    "(Worker_TP3 pid=97) INFO 06-02 21:27:40 [gpu_model_runner.py:4400] Capturing CUDA graphs (mixed prefill-decode)\n"
    "terminate called after throwing an instance of 'c10::Error'\n"
    "  what():  The graph should be registered to the state\n"
    "Exception raised from unregister_graph at /pytorch/aten/src/ATen/cuda/CUDAGeneratorImpl.cpp:162 (most recent "
    "call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9d (0x7e6d7b37305d in libc10.so)\n"
    "frame #3: at::cuda::CUDAGraph::~CUDAGraph() + 0x4c (0x7e6cc6ab2acc in libtorch_cuda.so)\n"
    "frame #9: VLLM::Worker_TP4() [0x59dcbd]\n"
    "(EngineCore pid=63) ERROR 06-02 21:27:57 [multiproc_executor.py:273] Worker proc VllmWorker-3 died "
    "unexpectedly, shutting down executor.\n"
    + "".join(CORE + line + "\r\n" for line in [
        "EngineCore failed to start.",
        "Traceback (most recent call last):",
        '  File "/vllm/v1/executor/multiproc_executor.py", line 386, in get_response',
        "    status, result = mq.dequeue(timeout=dequeue_timeout)",
        '  File "/vllm/distributed/device_communicators/shm_broadcast.py", line 694, in acquire_read',
        '    raise RuntimeError("cancelled")'])
    + CORE + "RuntimeError: cancelled\n"
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
)

HSA = (
    "[2026-06-03 17:51:02] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: 0.81\n"
    ":0:rocdevice.cpp            :3582: 1886160784284 us:  Callback: Queue 0x7d0834200000 Aborting with error : "
    "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. Code: 0x1008\n"
    "Fatal Python error: Aborted\n"
    "\n"
    "Thread 0x00007d1de5ee7000 (most recent call first):\n"
    '  File "/opt/venv/lib/python3.10/site-packages/torch/cuda/streams.py", line 231 in synchronize\n'
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 3097 in process_batch_result\n'
    "\n"
    '[2026-06-03 17:51:40] INFO:     127.0.0.1:33860 - "GET /metrics HTTP/1.1" 200 OK\n'
)

MONITOR = (
    "Exception in thread Thread-2 (monitor):\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n'
    "    self.run()\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/observability/cpu_monitor.py", line 22, in monitor\n'
    "    curr_times = process.cpu_times()\n"
    '  File "/opt/venv/lib/python3.10/site-packages/psutil/_pslinux.py", line 1658, in wrapper\n'
    "psutil.NoSuchProcess: process no longer exists (pid=4089031)\n"
)

SERVED = (
    "[2026-06-03 18:03:11] INFO:     Application startup complete.\n"
    "[2026-06-03 18:03:11] The server is fired up and ready to roll!\n"
    "[2026-06-03 18:41:02] Prefill batch, #new-seq: 1, #new-token: 2048, #cached-token: 0, token usage: 0.40\n"
    '[2026-06-03 18:41:05] INFO:     127.0.0.1:49778 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
)


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_workers_cpp_terminate_is_the_cause_not_the_engines_cancelled_wait(endings: str) -> None:
    a = analyze_bytes(_as(CANCELLED, endings))
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "c10::Error"
    assert rc.message == "The graph should be registered to the state" and rc.line_no == 2
    assert rc.process == "Worker_TP4"  # (the line has no prefix: its backtrace's frames carry vLLM's process title)
    assert "rpc_cancelled" in {s.id for s in a.signatures}


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_rocm_runtime_abort_is_the_cause_of_the_fatal_python_error_and_what_follows(endings: str) -> None:
    a = analyze_bytes(_as(HSA + MONITOR * 2, endings))
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == "rocm_runtime_abort" and rc.line_no == 2
    assert "HSA_STATUS_ERROR_OUT_OF_RESOURCES" in rc.message


def test_faulthandlers_fatal_error_alone_fails_the_log() -> None:
    a = analyze_bytes(SERVED.encode() + b"Fatal Python error: Segmentation fault\n\nThread 0x00007d1 (most recent "
                      b'call first):\n  File "/srv/run.py", line 9 in main\n')
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == "python_fatal_error" and rc.line_no == 5


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_monitor_threads_lost_process_is_no_failure(endings: str) -> None:
    a = analyze_bytes(_as(SERVED + MONITOR * 3, endings))
    assert not a.failed and a.root_cause is None
    assert [s.id for s in a.signatures] == ["monitor_lost_process"]


FAULT = (
    "[2025-11-03 11:17:02 DP5 TP5] Capture cuda graph bs [1, 2, 4, 8, 16, 32, 64]\n"
    "Memory access fault by GPU node-5 (Agent handle: 0xa7f1660) on address 0x7ef920870000. Reason: Unknown.\n"
    "Fatal Python error: Aborted\n"
    "\n"
    + "".join(f"[2025-11-03 11:{20 + n // 10}:00 DP0 TP0] Decode batch, #running-req: 0, #token: 0, gen throughput "
              "(token/s): 0.00\n" for n in range(80))
    + "[2025-11-03 11:42:10 DP6 TP6] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2930, in run_scheduler_process\n'
    "    scheduler.event_loop_overlap()\n"
    "RuntimeError: [/app/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
    "[127.0.0.1]:11965\n"
)


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_gpu_fault_is_the_cause_of_what_other_ranks_raise_well_after_it(endings: str) -> None:
    a = analyze_bytes(_as(FAULT, endings))
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == "rocm_gpu_fault" and rc.line_no == 2


def test_a_traceback_right_after_a_cpp_terminate_names_the_failure() -> None:
    worker = "(VllmWorker rank=0 pid=226) ERROR 06-11 01:51:09 [multiproc_executor.py:527] "
    log = ("[rank0]:[E611 01:51:09.940883637 ProcessGroupNCCL.cpp:1896] [PG ID 2 PG GUID 3 Rank 0] Process group "
           "watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n"
           "terminate called after throwing an instance of 'c10::DistBackendError'\n"
           + "".join(worker + line + "\n" for line in [
               "Traceback (most recent call last):",
               '  File "/vllm/v1/worker/gpu_model_runner.py", line 1410, in execute_model',
               "    valid_sampled_token_ids = sampled_token_ids.tolist()",
               "RuntimeError: CUDA error: an illegal memory access was encountered"]))
    rc = analyze_bytes(log.encode()).root_cause
    assert rc is not None and rc.exception == "RuntimeError" and rc.line_no == 3


def test_rocms_abort_is_read_whatever_the_case_of_its_verb() -> None:
    a = analyze_bytes(b":0:rocdevice.cpp            :3586: 1632073880770 us:  Callback: Queue 0x744e39400000 aborting "
                      b"with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. "
                      b"code: 0x1016\nFatal Python error: Aborted\n")
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == "rocm_runtime_abort"
    assert rc.message.startswith("HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation")  # (the queue's address: noise)


SGLANG = "sgl_jax.srt.managers.tokenizer_manager:"
CHILD_KILLED = (
    '[2026-02-14 10:20:30] INFO:     127.0.0.1:36380 - "POST /v1/score HTTP/1.1" 200 OK\n'
    "WARNING:sgl_jax.srt.entrypoints.engine:Child process unexpectedly failed with exitcode=9. pid=936929\n"
    "[2026-02-14 10:20:36] Child process unexpectedly failed with exitcode=9. pid=936929\n"
    f"ERROR:{SGLANG}Scheduler subprocess is unavailable (dead pid(s): 936929). Please restart the server.\n"
    '[2026-02-14 10:22:37] INFO:     127.0.0.1:36400 - "POST /v1/score HTTP/1.1" 400 Bad Request\n'
    f"WARNING:{SGLANG}SIGTERM received. signum=None frame=None. Draining requests and shutting down...\n"
    "[2026-02-14 10:22:38] Child process unexpectedly failed with exitcode=15. pid=936930\n"
    f"ERROR:{SGLANG}Signal SIGTERM received while health check failed. Exiting... remaining number of requests: 0\n"
)


def test_an_sglang_child_that_was_killed_fails_the_server_stopped_after_it() -> None:
    a = analyze_bytes(CHILD_KILLED.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == "sglang_child_exited" and rc.line_no == 2
    assert rc.message == "Child process unexpectedly failed with exitcode=9. pid=936929"


ENGINE = "ERROR 06-23 13:46:28 [engine.py:165] "
ATB = (
    'INFO:     10.113.166.94:58646 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    "INFO 06-23 13:45:55 [engine.py:317] Added request chatcmpl-88c303e8343e41a89ffde5dc07adba05.\n"
    "....[rank0]:[E623 13:46:28.176383770 compiler_depend.ts:429] ReshapeAndCacheOperation setup failed!\n"
    "Exception raised from OperationSetup at build/op_plugin_atb.dir/compiler_depend.ts:117 (most recent call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0xb8 (0xfffc4577c908 in libc10.so)\n"
    + "".join("ERROR 06-23 13:46:28 [serving_chat.py:911] " + line + "\n" for line in [
        "Error in chat completion stream generator.",
        "Traceback (most recent call last):",
        '  File "/vllm/engine/multiprocessing/client.py", line 596, in _process_request',
        "    raise request_output",
        ("vllm.engine.multiprocessing.MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find "
         "the original error: RuntimeError('The Inner error is reported as above.')")])
    + "".join(ENGINE + line + "\n" for line in [
        "Traceback (most recent call last):",
        '  File "/vllm/model_executor/layers/sampler.py", line 496, in _random_sample',
        "    random_samples = random_samples.cpu()",
        ("RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the "
         "current working operator name is ReshapeCacheOperation.")])
    + "INFO:     Shutting down\n"
)


def test_c10s_error_record_is_the_inner_error_torch_npu_points_at() -> None:
    rc = analyze_bytes(ATB.encode()).root_cause
    assert rc is not None and rc.line_no == 3 and rc.process == "rank0"
    assert rc.message.endswith("ReshapeAndCacheOperation setup failed!")


def test_a_crash_handlers_segfault_report_fails_a_quiet_start() -> None:
    log = ("(Worker_TP0 pid=2337) INFO 09-23 04:18:48 [default_loader.py:430] Loading weights took 1557.61 seconds\n"
           "(EngineCore pid=2102) INFO 09-23 04:18:49 [torch_utils.py:262] Reducing Torch threads from 28 to 1.\n"
           "!!!!!!! Segfault encountered !!!!!!!\n"
           + "".join(f'  File "<unknown>", line 0, in {fn}\n'
                     for fn in ("cuModuleLoadData", "loadBinary", "_PyEval_EvalFrameDefault", "Py_BytesMain", "_start")))
    a = analyze_bytes(log.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("segfault_report", 3)
    assert a.root_cause.hint and "native" in a.root_cause.hint


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_failed_cpp_check_and_its_native_stack_fail_a_quiet_start(endings: str) -> None:
    """Ray's core (or glog) CHECK: ``[ts C pid tid] core_worker.cc:842:  Check failed: ...`` then ``*** StackTrace
    Information ***`` and native frames, in a Ray actor's prefix: the process aborted (wild169 ve05's class)."""
    w = "(WorkerDict pid=40211) "
    log = (f"{w}INFO 09-02 11:02:10 [model_runner.py:1110] Loading model weights took 14.9 GiB\n"
           f"{w}[2025-09-02 11:02:13,448 C 40211 40290] core_worker.cc:842:  Check failed: actor_handle != nullptr \n"
           f"{w}*** StackTrace Information ***\n"
           + "".join(f"{w}/opt/conda/lib/python3.11/site-packages/ray/_raylet.so(+0x{a:x}) [0x7f{a:x}] {fn}\n"
                     for a, fn in ((0x13ddb7a, "ray::operator<<()"), (0x9ad05c, "ray::core::CoreWorker::GetActorHandle()"),
                                   (0x9ae30a, "std::_Function_handler<>::_M_invoke()"))))
    a = analyze_bytes(_as(log, endings))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("native_check_failed", 2)
    assert "actor_handle != nullptr" in a.root_cause.message


@pytest.mark.parametrize("endings", ENDINGS)
def test_terminates_of_several_threads_in_a_row_share_the_what_after_them(endings: str) -> None:
    """Four workers' ``terminate called after throwing ...`` in a row, then one ``what():``: the first is the
    cause, and its message is what was thrown (not the terminate line)."""
    log = ("(Worker_TP0 pid=2337) INFO 09-23 04:18:48 [default_loader.py:430] Loading weights took 15.61 seconds\n"
           + "terminate called after throwing an instance of 'c10::AcceleratorError'\n" * 4
           + "  what():  CUDA error: an illegal memory access was encountered\n"
           + "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/ for more information.\n")
    rc = analyze_bytes(_as(log, endings)).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("c10::AcceleratorError", 2)
    assert rc.message == "CUDA error: an illegal memory access was encountered"
