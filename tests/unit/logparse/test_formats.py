"""Older and foreign log formats (issue 15), built line by line from the formats in the sources: vLLM <= 0.7
(``LEVEL MM-DD HH:MM:SS file.py:N] msg``, ``(VllmWorkerProcess pid=N)``, Ray's ``(RayWorkerWrapper pid=N,
ip=...)``), 0.8-0.9 ``(VllmWorker rank=N pid=N)``, SGLang's scheduler, C++ fatal output; each in vLLM's
``\\r\\n`` form where vLLM writes it and with plain ``\\n``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.prefixes import sglang_place


def _log(*records: str | list[str]) -> bytes:
    """A log: a str is one line; a list is one multi-line record (vLLM joins its lines with ``\\r\\n``)."""
    return "".join((r if isinstance(r, str) else "\r\n".join(r)) + "\n" for r in records).encode()


def _both(data: bytes) -> list[bytes]:
    return [data, re.sub(rb"\r\n?", b"\n", data)]


def _frames(prefix: str, exc: str) -> list[str]:
    return [prefix + "Traceback (most recent call last):",
            prefix + '  File "/opt/venv/lib/python3.10/site-packages/vllm/worker/worker.py", line 180, in init_device',
            prefix + "    torch.cuda.set_device(self.device)",
            prefix + exc]


V0_WORKER = "(VllmWorkerProcess pid=4107) ERROR 02-11 08:14:55 multiproc_worker_utils.py:226] "


@pytest.mark.parametrize("form", [0, 1])
def test_v0_worker_process_traceback(form: int) -> None:
    """vLLM 0.6: the worker's record (``file:line]`` without ``[``) holds the cause; the driver's later
    re-raise and ``Worker ... died`` are not it."""
    data = _log(
        "INFO 02-11 08:14:40 llm_engine.py:237] Initializing an LLM engine (v0.6.6) with config: model='m'",
        [V0_WORKER + "Exception in worker VllmWorkerProcess while processing method init_device.",
         *_frames(V0_WORKER, "RuntimeError: CUDA error: invalid device ordinal")],
        "ERROR 02-11 08:14:56 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 4107 died, exit code: 1",
        "Traceback (most recent call last):",
        '  File "/opt/venv/bin/vllm", line 8, in <module>',
        "RuntimeError: Worker failed with error 'CUDA error: invalid device ordinal', please check the stack "
        "trace above for the root cause",
    )
    rc = analyze_bytes(_both(data)[form]).root_cause
    assert rc is not None
    assert (rc.exception, rc.message, rc.process) == ("RuntimeError", "CUDA error: invalid device ordinal",
                                                      "VllmWorkerProcess")


@pytest.mark.parametrize(("prefix", "process"), [("(RayWorkerWrapper pid=9120, ip=10.1.2.3) ", "RayWorkerWrapper"),
                                               ("(pid=9120, ip=10.1.2.3) ", "pid"),
                                               ("(VllmWorker rank=3 pid=9120) ", "VllmWorker rank=3")])
def test_ray_and_rank_prefixes(prefix: str, process: str) -> None:
    """Ray's and 0.8's worker prefixes name the writer of the cause."""
    head = prefix + "ERROR 05-04 12:38:38 [worker_base.py:620] "
    data = _log([head + "Error executing method 'load_model'. This might cause deadlock in distributed execution.",
                 *_frames(head, "AssertionError: head size 80 is not supported")],
                "ERROR 05-04 12:38:39 [core.py:390] EngineCore failed to start.")
    for form in _both(data):
        a = analyze_bytes(form)
        assert a.failed and a.root_cause is not None
        assert (a.root_cause.exception, a.root_cause.message) == ("AssertionError", "head size 80 is not supported")
        assert a.root_cause.process == process


def test_sglang_scheduler_exception() -> None:
    """SGLang puts the header at the end of its log line; the frames and the exception follow raw."""
    data = _log(
        "[2025-07-02 10:00:01 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16",
        "[2025-07-02 10:00:02 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2301, in run_scheduler_process',
        "    scheduler.event_loop_normal()",
        "KeyError: 'draft_token_num'",
        "",
        "[2025-07-02 10:00:02] Received sigquit from a child process. It usually means the child failed.",
    )
    a = analyze_bytes(data)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message) == ("KeyError", "'draft_token_num'")
    assert a.root_cause.process == "TP0"  # the rank's scheduler the record names, not "main"


def test_sglang_root_cause_names_the_rank_its_record_names() -> None:
    """A real SGLang TP8 log (MI300X, wild113 mo01): the NameError is TP4's scheduler's, as its record says
    (``[2025-12-13 10:51:55 TP4] Scheduler hit an exception``), with plain or collected line ends; a place of
    several parallel ranks is named whole; the main process's records (``[ts] ``) name none."""
    log = Path(__file__).resolve().parents[2] / "data" / "wild113" / "mo01_sglang_dsv3_tp8_mi300x_mla_metadata_nameerror.log"
    for data in (log.read_bytes(), log.read_bytes().replace(b"\n", b"\r\n")):
        rc = analyze_bytes(data).root_cause
        assert rc is not None and (rc.exception, rc.process) == ("NameError", "TP4")
    assert sglang_place("[2025-05-28 06:32:54 DP1 PP0 TP3 EP3]") == "DP1 PP0 TP3 EP3"
    assert sglang_place("[2025-05-28 06:32:54]") is None and sglang_place("INFO 05-28 06:32:54 [x.py:1]") is None


def test_cpp_terminate_takes_its_message_from_what() -> None:
    """No Python exception: ``terminate called ...`` then ``what():``; the engine's echo after it is a symptom."""
    data = _log(
        "INFO:     127.0.0.1:51000 - \"POST /v1/completions HTTP/1.1\" 200 OK",
        "terminate called after throwing an instance of 'c10::Error'",
        "  what():  CUDA error: unspecified launch failure",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.",
        "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 (most "
        "recent call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f00 in libc10.so)",
        "ERROR 04-01 10:00:09 [multiproc_executor.py:140] Worker proc VllmWorker-1 died unexpectedly, shutting "
        "down executor.",
    )
    a = analyze_bytes(data)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message, a.root_cause.signature) == (
        "c10::Error", "CUDA error: unspecified launch failure", "cpp_terminate")


def test_nccl_watchdog_timeout_without_traceback() -> None:
    """torch's NCCL watchdog lines, no Python exception: the watchdog line is the cause."""
    data = _log(
        "[rank1]:[E1201 09:00:00.123456 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=7, OpType=ALLGATHER, NumelIn=4096, NumelOut=8192, Timeout(ms)=600000) ran for "
        "600012 milliseconds before timing out.",
        "ERROR 12-01 09:00:01 [multiproc_executor.py:140] Worker proc VllmWorker-1 died unexpectedly, shutting "
        "down executor.",
    )
    a = analyze_bytes(data)
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "nccl_error"
    assert "Watchdog caught collective operation timeout" in a.root_cause.message


def test_device_assertion_without_traceback() -> None:
    """A kernel assertion, then the process aborts (no Python exception): the assertion is the cause."""
    data = _log(
        "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1369: indexSelectSmallIndex: block: [3,0,0], thread: "
        "[0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
        "terminate called after throwing an instance of 'c10::AcceleratorError'",
        "  what():  CUDA error: device-side assert triggered",
    )
    rc = analyze_bytes(data).root_cause
    assert rc is not None and rc.signature == "device_assert" and "srcIndex < srcSelectDimSize" in rc.message


def test_request_traceback_in_an_error_record_while_serving_is_not_a_failure() -> None:
    """The API server logs one request's failure as an ERROR record with a traceback, answers 400 and
    serves on: not failed, no root cause."""
    head = "(APIServer pid=77) ERROR 06-01 10:00:00 [serving_completion.py:160] "
    data = _log(
        "(APIServer pid=77) INFO 06-01 09:59:00 [api_server.py:1000] Starting vLLM API server 0 on http://0.0.0.0:8000",
        "(APIServer pid=77) INFO:     Application startup complete.",
        [head + "Error in preprocessing prompt inputs", *_frames(head, "ValueError: prompt too long")],
        '(APIServer pid=77) INFO:     10.0.0.1:4000 - "POST /v1/completions HTTP/1.1" 400 Bad Request',
        '(APIServer pid=77) INFO:     10.0.0.1:4002 - "POST /v1/completions HTTP/1.1" 200 OK',
    )
    for form in _both(data):
        a = analyze_bytes(form)
        assert (a.failed, a.root_cause) == (False, None)
        assert a.errors >= 1


def test_stop_exceptions_are_not_failures() -> None:
    """Ctrl-C: a child's ``KeyboardInterrupt`` traceback, then uvicorn stops: not failed."""
    data = _log(
        "INFO 08-01 10:00:00 [api_server.py:1000] Starting vLLM API server 0 on http://0.0.0.0:8000",
        "Process EngineCore_0:",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
        "KeyboardInterrupt",
        "INFO:     Shutting down",
    )
    a = analyze_bytes(data)
    assert (a.failed, a.root_cause) == (False, None)


TORCH_E = "(EngineCore_DP0 pid=5120) [rank0]:E1203 10:41:07.318000 5120 torch/_inductor/runtime/triton_heuristics.py:539] [0/0] "


@pytest.mark.parametrize("form", [0, 1])
def test_torch_log_records_carry_their_traceback(form: int) -> None:
    """PyTorch logs in glog's layout (``E1203 10:41:07.318000 PID file.py:N] [0/0] ``, after ``[rank0]:``):
    a traceback in such an error record is read as one record, and its exception line names the cause that
    the engine's later wrapper (``InductorError: RuntimeError: ...``) repeats."""
    data = _log(
        "(EngineCore_DP0 pid=5120) [rank0]:W1203 10:40:58.001000 5120 torch/_inductor/utils.py:1731] Not enough "
        "SMs to use max_autotune_gemm mode",
        [TORCH_E + "Triton compilation failed: triton_tem_fused_0",
         *_frames(TORCH_E, "RuntimeError: Triton Error [CUDA]: out of resource: shared memory")],
        "(EngineCore_DP0 pid=5120) ERROR 12-03 10:41:07 [core.py:710] EngineCore encountered a fatal error.",
        *_frames("(EngineCore_DP0 pid=5120) ERROR 12-03 10:41:07 [core.py:710] ",
                 "torch._inductor.exc.InductorError: RuntimeError: Triton Error [CUDA]: out of resource: shared "
                 "memory"),
    )
    rc = analyze_bytes(_both(data)[form]).root_cause
    assert rc is not None and (rc.exception, rc.process, rc.line_no) == ("RuntimeError", "EngineCore_DP0", 3)
    assert rc.message == "Triton Error [CUDA]: out of resource: shared memory"


def test_a_torch_warning_record_is_not_an_error() -> None:
    """``W...`` is PyTorch's warning: a log that only has it has not failed."""
    a = analyze_bytes(_log("(EngineCore pid=17) [rank0]:W0801 17:49:10.593000 17 torch/_inductor/utils.py:1731] "
                           "Not enough SMs to use max_autotune_gemm mode"))
    assert not a.failed and a.errors == 0


FRAME = '  File "/venv/vllm/model_executor/layers/linear.py", line 1228, in weight_loader'
IPYTHON = ["-" * 75, "AssertionError" + " " * 32 + "Traceback (most recent call last)",
           "File /venv/vllm/model_executor/layers/linear.py:1228, in RowParallelLinear.weight_loader(self, param)"]


@pytest.mark.parametrize(("lines", "message"), [
    (["Traceback (most recent call last):", FRAME, "    assert param.shape == loaded.shape", "AssertionError"],
     "assert param.shape == loaded.shape"),
    ([*IPYTHON, "   1227     loaded = loaded.reshape(1)", "-> 1228 assert param.shape == loaded.shape",
      "   1229 param.copy_(loaded)", "", "AssertionError: "], "assert param.shape == loaded.shape"),
    (["Traceback (most recent call last):", FRAME, "    raise AssertionError", "AssertionError"], ""),
], ids=["python", "ipython", "raise"])
def test_a_bare_assertion_error_says_which_assert_failed(lines: list[str], message: str) -> None:
    """``AssertionError`` with no message: the statement it failed on, shown above it (IPython: the line its
    gutter's arrow points at, among lines around it), is the message; a ``raise`` shows none."""
    rc = analyze_bytes(_log(*lines)).root_cause
    assert rc is not None and (rc.exception, rc.message) == ("AssertionError", message)

