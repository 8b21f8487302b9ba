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
    a = analyze_bytes(_log(
        "[rank3]:[W208 00:55:32.444220068 socket.cpp:487] [c10d] waitForInput: socket SocketImpl(fd=103, "
        "addr=[::ffff:127.0.0.1]:52362, remote=[::ffff:127.0.0.1]:5000) timed out after 1800000ms",
        "[2025-02-08 00:55:32 TP5] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/scheduler.py", line 1787, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 178, in __init__',
        "    min_per_gpu_memory = self.init_torch_distributed()",
        '  File "/usr/local/lib/pyth'))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("c10d_store_timeout", 1)


def test_rays_raylet_socket_line_alone_is_a_failure() -> None:
    a = analyze_bytes(_log("raylet_client.cc:60: Could not connect to socket /data/ray/session_1/sockets/raylet.1"))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "raylet_unreachable"


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
    a = analyze_bytes(_log(*_DUMP))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("sglang_watchdog_dump", 2)


def test_sglangs_watchdog_timeout_line_stays_the_cause_after_its_dump() -> None:
    a = analyze_bytes(_log(*_DUMP, "[2025-11-05 10:18:56] Watchdog timeout (self.watchdog_timeout=300)"))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.signature == "sglang_watchdog_timeout"


def test_fatal_python_errors_of_several_processes_on_one_line_are_the_crash() -> None:
    """Many processes writing faulthandler's report at once: its words repeated on one line, then the thread dumps
    (wild216's form)."""
    a = analyze_bytes(_log("Fatal Python error: " * 4 + "Segmentation fault" * 4, "",
                           "Thread 0x00007f315bfff6c0 (most recent call first):",
                           '  File "/x/torch/_inductor/compile_worker/subproc_pool.py", line 73 in _recv_msg',
                           '  File "/x/threading.py", line 982 in run'))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("python_fatal_error", 1)
