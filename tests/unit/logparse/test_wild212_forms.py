"""Forms of session 46 (the blind sets from wild212 on).  Every text here is written for the test, in the forms the
real logs showed; the sets themselves stay a measure (``bench/verdict_score.py tests/data/wild212``)."""

from __future__ import annotations

import io

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.analyze import analyze_stream
from orchestrator.logparse.csvquoted import quoted_lines
from orchestrator.logparse.prefixes import parse_line


def _log(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def _cause(*lines: str) -> tuple[str | None, int]:
    """The signature and line of the root cause of a log that failed."""
    a = analyze_bytes(_log(*lines))
    assert a.failed and a.root_cause is not None
    return a.root_cause.signature, a.root_cause.line_no


_V0 = "ERROR 07-02 01:08:20 [async_llm_engine.py:67] "


def test_a_log_exported_as_csv_is_read_without_its_quoting() -> None:
    """Each line a quoted CSV field, quotes inside doubled: the verdict of the log itself, with a note."""
    lines = ["INFO 07-02 01:08:19 [api_server.py:1] vLLM API server version 0.9.1",
             _V0 + "Traceback (most recent call last):",
             _V0 + '  File "/x/vllm/spec_decode/top1_proposer.py", line 70, in get_spec_proposals',
             _V0 + "    raise ValueError(\"draft worker failed\")",
             _V0 + 'ValueError: draft worker failed: "k" must be > 0']
    csv = "".join('"' + line.replace('"', '""') + '"\n' for line in lines).encode()
    notes: list[str] = []
    got = analyze_stream(io.BytesIO(csv), notes=notes)
    want = analyze_bytes(_log(*lines))
    assert got.failed and got.root_cause is not None and want.root_cause is not None
    assert (got.root_cause.exception, got.root_cause.message) == (want.root_cause.exception, want.root_cause.message)
    assert got.root_cause.message == 'draft worker failed: "k" must be > 0'
    assert notes and notes[0].startswith("exported as CSV")


def test_a_csv_export_that_cut_each_line_at_a_comma_still_shows_the_cut_traceback() -> None:
    """A V0 engine's traceback records, exported as CSV and each cut at its first comma (the rest went to other
    columns): the frame lines end just after their paths.  The log ends in them: a traceback cut before its
    exception line (wild215's form)."""
    frames = [_V0 + 'File ""/x/vllm/spec_decode/multi_step_worker.py""', _V0 + "^^^^^^^^^^^^^^^^^^^^^",
              _V0 + "return func(*args", _V0 + 'File ""/x/vllm/spec_decode/top1_proposer.py""',
              _V0 + "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^", _V0 + "return self._proposer.get_spec_proposals(",
              _V0 + 'File ""/x/vllm/spec_decode/smaller_tp_proposer_worker.py""']
    a = analyze_bytes(_log(*('"' + f for f in frames), '"ER'))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception is None and a.root_cause.traceback is not None
    assert "smaller_tp_proposer_worker.py" in a.root_cause.traceback


def test_lines_that_merely_start_with_a_quoted_string_are_not_csv() -> None:
    sample = _log('"GET /v1/models HTTP/1.1" 200 OK', '"POST /v1/completions HTTP/1.1" 200 OK',
                  '"POST /v1/completions HTTP/1.1" 400 Bad Request')
    assert not quoted_lines(sample)
    assert quoted_lines(_log('"a ""b"" c"', '"d"', '"e"'))


def test_a_line_naming_a_file_in_quotes_is_no_frame() -> None:
    a = analyze_bytes(_log("INFO 07-02 01:08:19 [config.py:1] loading", 'File "config.json"'))
    assert not a.failed


def test_a_log_that_ends_in_a_traceback_header_cut_short_failed() -> None:
    """SGLang's ``Scheduler hit an exception: Traceback (most`` as the log's last line (the paste ended there):
    a traceback cut before its frames (wild212's form)."""
    a = analyze_bytes(_log("Loading safetensors checkpoint shards:  25% Completed | 41/163 [00:09<00:27,  4.36it/s]",
                           "", "[2025-02-04 12:04:13 TP0] Scheduler hit an exception: Traceback (most"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.line_no, a.root_cause.process) == (3, "TP0")


def test_a_header_cut_short_that_the_log_goes_on_after_is_no_failure() -> None:
    a = analyze_bytes(_log("[2025-02-04 12:04:13] note: print(Traceback (most", "[2025-02-04 12:04:14] ready"))
    assert not a.failed


def test_c10d_store_timeout_before_a_cut_scheduler_traceback_is_the_cause() -> None:
    """A rank's TCPStore wait timing out (c10d's ``[W]`` record), then the scheduler's start-up traceback, cut:
    the timeout says why (wild212's form)."""
    assert _cause(
        "[rank3]:[W208 00:55:32.444220068 socket.cpp:487] [c10d] waitForInput: socket SocketImpl(fd=103, "
        "addr=[::ffff:127.0.0.1]:52362, remote=[::ffff:127.0.0.1]:5000) timed out after 1800000ms",
        "[2025-02-08 00:55:32 TP5] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/scheduler.py", line 1787, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 178, in __init__',
        "    min_per_gpu_memory = self.init_torch_distributed()",
        '  File "/usr/local/lib/pyth') == ("c10d_store_timeout", 1)


def test_rays_raylet_socket_line_alone_is_a_failure() -> None:
    assert _cause("raylet_client.cc:60: Could not connect to socket /data/ray/session_1/sockets/raylet.1") == (
        "raylet_unreachable", 1)


_RELAYED = "2026-05-29 09:14:44,198 - INFO - [container] (EngineCore pid=695) ERROR 05-29 16:14:44 [core.py:1186] "


def test_a_relayed_records_writer_is_the_relayed_processs() -> None:
    """A launcher's logger relaying the container's output (``- INFO - [container] ``), vLLM's process prefix kept:
    the record and the writer are vLLM's (wild214's form)."""
    p = parse_line(_RELAYED + "  File \"/x/vllm/v1/engine/core.py\", line 3, in run")
    assert (p.process, p.pid, p.level) == ("EngineCore", 695, "ERROR")
    a = analyze_bytes(_log(_RELAYED + "             ^^^^^^^^^^^^^^^^^^^^^^^^",
                           _RELAYED + '  File "/x/vllm/layers/lamport_workspace.py", line 185, in __init__',
                           _RELAYED + "    self._lamport = IpcBuffer(rank, world_size, lamport_total, process_group)",
                           "2026-05"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.process, a.root_cause.exception) == ("EngineCore", None)


_DUMP = ["[2025-11-05 10:18:50] INFO:     127.0.0.1:58100 - \"GET /v1/models HTTP/1.1\" 200 OK",
         "[2025-11-05 10:18:51] self.cur_batch.batch_size()=1",
         "self.cur_batch.reqs=[Req(rid=a46b, input_ids=[785, 6722], output_ids=[12095])]",
         "[2025-11-05 10:18:51] Pyspy dump for PID 499:",
         "Thread 499 (idle): \"MainThread\"",
         "    replay (npu_graph_runner.py:82)",
         "    run_batch (scheduler.py:1987)"]


def test_sglangs_watchdog_dump_without_its_timeout_line_is_a_hang() -> None:
    """The batch the watchdog logs before its py-spy dumps, the paste cut before ``Watchdog timeout``: the
    scheduler hung (wild216's form)."""
    assert _cause(*_DUMP) == ("sglang_watchdog_dump", 2)


def test_sglangs_watchdog_timeout_line_stays_the_cause_after_its_dump() -> None:
    assert _cause(*_DUMP, "[2025-11-05 10:18:56] Watchdog timeout (self.watchdog_timeout=300)")[0] == (
        "sglang_watchdog_timeout")


def test_fatal_python_errors_of_several_processes_on_one_line_are_the_crash() -> None:
    """Many processes writing faulthandler's report at once: its words repeated on one line, then the thread dumps
    (wild216's form)."""
    assert _cause("Fatal Python error: " * 4 + "Segmentation fault" * 4, "",
                  "Thread 0x00007f315bfff6c0 (most recent call first):",
                  '  File "/x/torch/_inductor/compile_worker/subproc_pool.py", line 73 in _recv_msg',
                  '  File "/x/threading.py", line 982 in run') == ("python_fatal_error", 1)


def test_a_reply_quoting_a_numbered_paste_is_read_without_both_columns() -> None:
    """``> `` then a line number in front of every line (a reply quoting ``cat -n``'s copy): both columns come off,
    and line numbers are the ones the column shows (wild222's form)."""
    rows = ['    parser_cls = ReasoningParserManager.get_reasoning_parser(',
            '                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^',
            '  File "/x/vllm/reasoning/abs_reasoning_parsers.py", line 245, in get_reasoning_parser',
            '    raise KeyError(',
            "KeyError: \"Reasoning parser 'telechat' not found.\""]
    notes: list[str] = []
    a = analyze_stream(io.BytesIO(_log(*(f"> {n:3d} {row}" for n, row in enumerate(rows, 55)))), notes=notes)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.line_no) == ("KeyError", 59)
    assert notes and notes[0].startswith("quoted") and "numbered" in notes[0] and "the file's" not in notes[0]


def test_a_ray_workers_traceback_with_its_line_breaks_lost_is_split_at_its_prefixes() -> None:
    """A worker's traceback lines (Ray's ``(SGLangWorker pid=N) `` before each) joined onto one line by a paste
    rendered as Markdown: split before each prefix, its exception is found (wild223's form)."""
    w = "(SGLangWorker pid=38138) "
    line = " ".join([w + 'File "/x/sglang/srt/model_executor/model_runner.py", line 1373, in init_cuda_graphs',
                     w + "self.cuda_graph_runner = CudaGraphRunner(self)",
                     w + 'File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 338, in **init**',
                     w + "raise Exception(", w + "Exception: Capture cuda graph failed: Internal Triton PTX codegen "
                     "error:", w + "ptxas fatal : Value 'sm_120' is not defined for option 'gpu-name'"])
    a = analyze_bytes(_log(line))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process) == ("Exception", "SGLangWorker")
    assert a.root_cause.message.startswith("Capture cuda graph failed")


_ENGINE = "(EngineCore_DP0 pid=3585) ERROR 12-08 18:21:31 [core.py:844] "


def _wrapped(lines: list[str], width: int) -> bytes:
    rows = [line[i:i + width] for line in lines for i in range(0, max(len(line), 1), width)]
    return _log(*rows)


def test_a_headless_traceback_of_error_records_hard_wrapped_is_still_a_cut_traceback() -> None:
    """An engine's traceback records, no header, cut at both ends, hard-wrapped at 120 columns: two rows alike (one
    prefix, one long path, cut at the same column) and one cut just after a frame's ``in `` (wild220's form)."""
    lines = [_ENGINE + "    model_output = future.result()",
             _ENGINE + '  File "/vllm/vllm/v1/executor/ray_utils.py", line 150, in result',
             _ENGINE + "    outputs = ray.get(self.ref_or_refs, timeout=timeout)",
             _ENGINE + '  File "/usr/local/lib/python3.12/dist-packages/ray/_private/auto_init_hook.py", line 22, in '
             "auto_init_wrapper",
             _ENGINE + "    return fn(*args, **kwargs)",
             _ENGINE + '  File "/usr/local/lib/python3.12/dist-packages/ray/_private/client_mode_hook.py", line 104, in '
             "wrapper",
             _ENGINE + "    return func(*args, **kwargs)"]
    assert lines[1].index(" in result") + len(" in ") == 120
    a = analyze_bytes(_wrapped(lines, 120))
    assert a.failed and a.root_cause is not None and a.root_cause.exception is None
    assert a.root_cause.traceback is not None and "client_mode_hook.py" in a.root_cause.traceback


def test_a_hard_wrapped_traceback_whose_last_row_the_log_cut_is_still_a_cut_traceback() -> None:
    """The rows alike, and the last one cut in a path that the log's last line, cut too, does not finish
    (``.../executor/ab`` then ``stract.py", lin``: wild213's form)."""
    engine = "(EngineCore_0 pid=955818) ERROR 11-01 17:53:05 [core.py:710] "
    core = engine + '  File "/home/ubuntu/project/tests/vllm/vllm/v1/engine/core.py", line '
    lines = [engine + "    self._process_engine_step()", core + "753, in _process_engine_step",
             engine + "    outputs, model_executed = self.step_fn()", core + "289, in step",
             engine + "    model_output = self.execute_model_with_error_logging(",
             core + "275, in execute_model_with_error_logging", engine + "    raise err",
             core + "266, in execute_model_with_error_logging", engine + "    return model_fn(scheduler_output)",
             engine + '  File "/home/ubuntu/project/tests/vllm/vllm/v1/executor/abstract.py", lin']
    a = analyze_bytes(_wrapped(lines, 120))
    assert a.failed and a.root_cause is not None and a.root_cause.exception is None


def test_rows_cut_in_frames_make_a_wrap_though_a_source_lines_row_is_among_them() -> None:
    """A V0 worker's frames, one prefix and one long path cut at the same column (the rows alike), and one source
    line wrapped too: the rows are a terminal's cut (wild223's form)."""
    ray = "(RayWorkerVllm pid=11490) ERROR 04-17 16:07:05 ray_utils.py:44] "
    site = "/root/anaconda3/envs/vllm/lib/python3.10/site-packages"
    lines = [ray + "    init_distributed_environment(self.parallel_config, self.rank, distributed_init_method)",
             ray + f'  File "{site}/vllm/worker/worker.py", line 287, in init_distributed_environment',
             ray + "    pynccl_utils.init_process_group(",
             ray + f'  File "{site}/vllm/model_executor/parallel_utils/pynccl_utils.py", line 46, in init_process_group',
             ray + "    comm = NCCLCommunicator(init_method=init_method,",
             ray + f'  File "{site}/torch/distributed/c10d_logger.py", line 75, in wrapper',
             ray + "    return func(*args, **kwargs)",
             ray + f'  File "{site}/torch/distributed/distributed_c10d.py", line 1', ]
    a = analyze_bytes(_wrapped(lines, 120))
    assert a.failed and a.root_cause is not None and a.root_cause.process == "RayWorkerVllm"
