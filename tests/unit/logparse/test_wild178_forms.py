"""Forms the blind sets of session 43 found (wild178 to wild185).  Every text here is written for the test, in the
forms the real logs showed; the sets themselves stay a measure (``bench/verdict_score.py tests/data/wild178``)."""

from __future__ import annotations

from logforms import hard_wrapped

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.prefixes import parse_line


def _log(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


#: The engine process logging the exception that kills it at start-up, one error record a line, the paste cut
#: above the exception line and below in the next record's head (wild178's form).
_ENGINE_RECORDS = [
    ("(EngineCore pid=311) ERROR 05-02 09:12:40 [core.py:1200]   File \"/opt/venv/vllm/v1/engine/core.py\", "
     "line 140, in __init__"),
    "(EngineCore pid=311) ERROR 05-02 09:12:40 [core.py:1200]     num_blocks = self._initialize_kv_caches(config)",
    ("(EngineCore pid=311) ERROR 05-02 09:12:40 [core.py:1200]   File \"/opt/venv/vllm/v1/executor/abstract.py\", "
     "line 120, in initialize_from_config"),
    "(EngineCore pid=311) ERROR 05-02 09:12:40 [core.py:1200]     self.collective_rpc(\"compile_or_warm_up_model\")",
    "(EngineCore pid=311) ERROR 05-0",
]


def test_frames_in_error_records_cut_in_the_next_records_stamp_failed() -> None:
    """The last line is the next record's head cut in its stamp (the start of the line above): the log ends in
    the frames, a traceback cut before its exception line."""
    a = analyze_bytes(_log(*_ENGINE_RECORDS))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process) == (None, "EngineCore")
    assert a.root_cause.traceback is not None and "initialize_from_config" in a.root_cause.traceback


def test_a_last_line_that_is_not_a_cut_head_keeps_its_meaning() -> None:
    """A last line of its own (not the start of the line above) after the frames: not a cut paste, so not a
    traceback cut in its frames."""
    a = analyze_bytes(_log(*_ENGINE_RECORDS[:-1], "(EngineCore pid=311) INFO 05-02 09:12:41 [core.py:90] Retrying."))
    assert not a.failed


def test_a_consoles_stamp_in_front_of_vllm_records_is_a_collectors() -> None:
    """A container console's copy stamps every line (``YYYY-MM-DD HH:MM:SS``) in front of vLLM's own record: the
    record's level, place and message are vLLM's."""
    line = parse_line("2025-07-10 08:59:40 ERROR 07-09 17:59:40 [core.py:586]   File \"/x/core.py\", line 82, in f")
    assert (line.level, line.record) == ("ERROR", "ERROR 07-09 17:59:40 [core.py:586]")
    assert line.message == '  File "/x/core.py", line 82, in f'
    # Python logging's own ``asctime levelname message`` keeps its stamp as the record's.
    own = parse_line("2025-07-10 08:59:40,123 ERROR boom")
    assert (own.level, own.message) == ("ERROR", "boom")


def test_frames_in_stamped_error_records_cut_at_the_end_failed() -> None:
    stamped = ["2025-07-10 08:59:40 " + line.split(") ", 1)[1] for line in _ENGINE_RECORDS[:-1]]
    a = analyze_bytes(_log(*stamped, "20"))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.traceback is not None and "initialize_from_config" in a.root_cause.traceback


def test_sglang_draining_on_a_sigterm_is_a_clean_stop() -> None:
    """SGLang's server told to stop (wild179's form): it drains, its children end on the signal (exit code -15)
    and it sends itself SIGQUIT; the job stopped, it did not fail."""
    a = analyze_bytes(_log(
        "[2026-04-06 01:30:02] INFO:     Application startup complete.",
        '[2026-04-06 01:36:34] INFO:     127.0.0.1:56180 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        ("[2026-04-06 01:36:35] Decode batch, #running-req: 16, #token: 4267, token usage: 0.00, cuda graph: True, "
         "gen throughput (token/s): 2928.33, #queue-req: 0"),
        "[2026-04-06 01:36:35] SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
        ("[2026-04-06 01:36:35] Subprocess detokenizer (pid=3450052) crashed with exit code -15. Triggering SIGQUIT "
         "for cleanup..."),
        "[2026-04-06 01:36:35] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
    ))
    assert not a.failed
    assert a.phase.value == "stopped"


def test_a_traceback_behind_skypilots_prefix_and_fastchats_column_names_its_exception() -> None:
    """SkyPilot's ``(task, pid=N)`` in front of each line of its job, FastChat's ``ts | ERROR | stderr |``
    column behind it (wild180's form): the exception line is read as one."""
    col = "(task, pid=4411) 2024-02-01 10:00:07 | ERROR | stderr | "
    a = analyze_bytes(_log(
        "(task, pid=4411) Waiting for model worker to start...",
        col + "Traceback (most recent call last):",
        col + '  File "/opt/conda/lib/python3.10/site-packages/fastchat/serve/vllm_worker.py", line 220, in <module>',
        col + "    engine = AsyncLLMEngine.from_engine_args(engine_args)",
        col + "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens (20000)",
    ))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process) == ("ValueError", "task")
    assert "max seq len (32768)" in a.root_cause.message


def test_skypilots_multi_node_prefix_names_the_node_and_rank() -> None:
    line = parse_line("(worker1, rank=1, pid=4567, ip=127.0.0.2) INFO 01-02 10:00:00 [core.py:61] Initializing")
    assert (line.process, line.pid, line.level) == ("worker1 rank=1", 4567, "INFO")


def test_the_cuda_error_a_paste_begins_with_outranks_a_cut_traceback_after_it() -> None:
    """A paste that begins in a CUDA error's message (PyTorch names the error's enum on a line of its own), then
    the engine's traceback, cut before its exception line (wild181's form): the CUDA error is the cause."""
    rec = "(EngineCore_DP0 pid=131) ERROR 02-24 19:04:56 [core.py:902] "
    a = analyze_bytes(_log(
        rec + ("Search for `cudaErrorLaunchFailure' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
               "group__CUDART__TYPES.html for more information."),
        rec + "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "(EngineCore_DP0 pid=131) Process EngineCore_DP0:",
        "(EngineCore_DP0 pid=131) Traceback (most recent call last):",
        '(EngineCore_DP0 pid=131)   File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
        "(EngineCore_DP0 pid=131)     self.run()",
    ))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.process, a.root_cause.line_no) == ("EngineCore_DP0", 1)
    assert "cudaErrorLaunchFailure" in a.root_cause.message
    assert a.root_cause.traceback is not None and "_bootstrap" in a.root_cause.traceback


def test_the_tail_of_a_cuda_errors_message_under_its_exception_line_stays_part_of_it() -> None:
    """The enum's line under the exception line it goes on (a worker's traceback, other workers' lines between):
    the exception line is the cause."""
    a = analyze_bytes(_log(
        "(Worker_TP0 pid=11) ERROR 02-24 19:04:50 [multiproc_executor.py:700] WorkerProc hit an exception.",
        "(Worker_TP0 pid=11) Traceback (most recent call last):",
        '(Worker_TP0 pid=11)   File "/srv/vllm/v1/worker/gpu_worker.py", line 412, in execute_model',
        "(Worker_TP0 pid=11)     torch.accelerator.synchronize()",
        "(Worker_TP0 pid=11) torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        "(Worker_TP1 pid=12) INFO 02-24 19:04:50 [multiproc_executor.py:720] Parent process exited, terminating.",
        ("(Worker_TP0 pid=11) Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
         "group__CUDART__TYPES.html for more information."),
    ))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception or "").endswith("AcceleratorError") and a.root_cause.line_no == 2


def test_an_uncorrectable_ecc_error_is_told_as_a_hardware_fault() -> None:
    """wild183's form: the CUDA error is the GPU's memory failing, not a kernel's bug; the hint says what to do
    with the GPU (a kernel's illegal access has another)."""
    a = analyze_bytes(_log(
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/srv/bench/profile_lora.py", line 88, in <module>',
        "[rank0]:     torch.cuda.synchronize()",
        "[rank0]: RuntimeError: CUDA error: uncorrectable ECC error encountered",
    ))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.signature == "cuda_ecc_error"
    assert "ECC" in (a.root_cause.hint or "") and "CUDA_LAUNCH_BLOCKING" not in (a.root_cause.hint or "")


def test_the_raylets_count_of_workers_it_killed_for_memory_is_the_cause() -> None:
    """wild185's form: the raylet's report of the workers it killed for host memory comes before its advice; the
    report is the cause.  With none killed (only crashed ones counted) it is not an OOM kill."""
    report = ("(raylet) [2026-03-01 10:00:00,000 E 311 311] (raylet) node_manager.cc:3007: {n} Workers (tasks / "
              "actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: abd4, "
              "IP: 127.0.0.1) over the last time period.")
    advice = ("(raylet) Refer to the documentation on how to address the out of memory issue: "
              "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html.")
    a = analyze_bytes(_log(report.format(n=2), "(raylet)", advice))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("ray_oom_killed", 1)
    none_killed = analyze_bytes(_log(report.format(n=0)))
    assert "ray_oom_killed" not in {s.id for s in none_killed.signatures}


def test_colour_codes_that_lost_their_escape_byte_are_read_as_codes() -> None:
    """wild186's form: a copy from a web page keeps ``[1;36m(EngineCore_DP0 pid=149)[0;0m`` without the escape
    byte; read as codes, the prefix is the engine's and its error records' traceback names the exception."""
    rec = "[1;36m(EngineCore_DP0 pid=149)[0;0m ERROR 12-08 22:23:04 [core.py:842] "
    notes: list[str] = []
    a = analyze_bytes(_log(
        rec + "EngineCore failed to start.",
        rec + "Traceback (most recent call last):",
        rec + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/utils.py", line 116, in __init__',
        rec + "    self.gpu = torch.zeros_like(self.cpu, device=device)",
        rec + "torch.AcceleratorError: HIP error: invalid device function",
    ), notes)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process) == ("torch.AcceleratorError", "EngineCore_DP0")
    assert any("escape byte" in note for note in notes)


def test_codes_without_their_escape_byte_in_a_hard_wrapped_copy_are_read() -> None:
    """The rows were wrapped with the codes as text (a web page's): both reshapings are undone, the rows joined and
    the codes read as codes (the rows are joined first: wild97's fo06, a Ray log, lost its verdict hard-wrapped when
    the codes were made codes first)."""
    lines = [("[36m(RayWorkerWrapper pid=860)[0m " if i % 2 else "") + f"INFO 04-16 10:28:{i:02d} [worker.py:61] "
             f"step {i}: all ranks are waiting on the compiled graph's channel to be read by the driver" for i in range(20)]
    rec = "[36m(RayWorkerWrapper pid=860)[0m ERROR 04-16 10:35:25 [worker.py:88] "
    lines += [rec + "Traceback (most recent call last):",
              rec + '  File "/srv/vllm/worker.py", line 3, in read',
              rec + ("ray.exceptions.RayChannelTimeoutError: System error: Timed out waiting for object "
                     "available to read.")]
    notes: list[str] = []
    a = analyze_bytes(hard_wrapped(_log(*lines), 120), notes)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception or "").endswith("RayChannelTimeoutError")
    assert "Timed out waiting for object available to read" in a.root_cause.message
    assert any("hard-wrapped" in note for note in notes) and any("escape byte" in note for note in notes)


def test_a_bracketed_number_and_m_in_a_plain_log_is_left_alone() -> None:
    """Without vLLM's coloured prefix at line starts, ``[5m`` is text (a duration), not a colour code."""
    notes: list[str] = []
    a = analyze_bytes(_log("step took [5m 3s] on node 3", "step took [6m 1s] on node 4"), notes)
    assert not a.failed and not any("escape byte" in note for note in notes)


def test_a_program_for_another_architecture_is_the_cause() -> None:
    a = analyze_bytes(_log("exec /usr/local/bin/python3: exec format error"))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "exec_format_error"


def test_a_wrappers_word_that_vllm_failed_to_start_fails_the_log() -> None:
    """wild187's form: InstructLab's ``vLLM failed to start.`` alone: failed, its cause not shown (the hint says
    how to see it)."""
    a = analyze_bytes(_log("vLLM failed to start.  Retry with --enable-serving-output to learn more about the failure.",
                           "Using unknown model family: meta-llama specified by user."))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "wrapper_start_failed"
