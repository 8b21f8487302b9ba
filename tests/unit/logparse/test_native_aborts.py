"""Processes that die in native code, and what their death makes others print (found by the blind set wild75,
session 28):

* a C++ ``terminate`` in a worker (``what():  The graph should be registered to the state``), then the
  engine's ``RuntimeError: cancelled`` from the shared-memory wait its death cancelled: the worker's is the cause;
* the ROCm runtime's ``Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES``, then faulthandler's
  ``Fatal Python error: Aborted`` and its thread dumps: the runtime's abort is the cause;
* faulthandler's ``Fatal Python error: Segmentation fault`` alone fails the log;
* a monitoring thread's ``psutil.NoSuchProcess`` tracebacks when the processes it watched are gone (the server
  was stopped, or died of something else) are neither cause nor failure.

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
