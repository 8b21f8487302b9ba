"""An exception line standing alone at the end of a log (a paste of its tail: no ``Traceback`` header, no frame
above it) is what the process died of, as Python prints that last (found by a stranger's test of ``eorch log
analyze`` on pastes from GitHub issues, session 38).  Every text here is written for the test."""

from __future__ import annotations

import pytest

from orchestrator.logparse import analyze_bytes

from .conftest import parse_all

LINKER = ("/usr/bin/ld: cannot find -lcuda: No such file or directory\n"
          "collect2: error: ld returned 1 exit status\n\n")
CALLED = ("subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpab12/main.c', '-O3', '-shared', "
          "'-lcuda', '-o', '/tmp/tmpab12/cuda_utils.so']' returned non-zero exit status 1.\n")


@pytest.mark.parametrize("before", ["a\nb\n", "Loading model\n\n\n", LINKER, "x\n" * 300])
def test_an_exception_line_that_ends_the_log_is_its_cause(before: str) -> None:
    a = analyze_bytes((before + CALLED).encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "subprocess.CalledProcessError"
    assert "returned non-zero exit status 1" in rc.message and rc.line_no == before.count("\n") + 1


def test_so_it_is_when_the_line_is_longer_than_the_tail_shows() -> None:
    long = "ValueError: " + "shape mismatch " * 60 + "\n"
    a = analyze_bytes(("a\nb\n" + long + "\n\n").encode())
    assert a.failed and a.root_cause is not None and a.root_cause.exception == "ValueError"


def test_a_followed_run_fed_in_pieces_says_the_same() -> None:
    data = (LINKER + CALLED).encode()
    _, parser = parse_all(data, [7] * (len(data) // 7))
    assert parser.analysis() == analyze_bytes(data)


def test_a_log_record_that_ends_the_log_is_not_taken_so() -> None:
    """A logger's record holding an exception line (another worker's, after this one announced its failure) is
    one line of a logged traceback whose header the paste cut: the rules for records weigh it."""
    log = (b"(Worker_TP1 pid=3071) ERROR 06-11 22:40:09 [multiproc_executor.py:871] WorkerProc hit an exception.\n"
           b"(Worker_TP0 pid=3070) ERROR 06-11 22:40:09 [multiproc_executor.py:871] torch.AcceleratorError: CUDA "
           b"error: unspecified launch failure\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.process, rc.line_no) == ("Worker_TP1", 1)


@pytest.mark.parametrize("after", ["INFO 12-06 10:00:00 [loader.py:1] loading weights\n", "done\n"])
def test_an_exception_line_with_more_text_after_it_is_not(after: str) -> None:
    """A job that printed an exception line and went on (a warning that quotes one, a retried step) did not die
    of it: the log alone does not show a failure."""
    a = analyze_bytes(("a\nb\nValueError: bad value\n" + after).encode())
    assert not a.failed


def test_a_bare_name_under_another_writers_statement_is_not() -> None:
    """An exception named with no message, under another writer's statement: nothing says it was raised."""
    a = analyze_bytes(b"(Worker pid=9) ERROR ... raise KVCacheError(msg)\nTimeoutError\n")
    assert a.root_cause is None or a.root_cause.exception != "TimeoutError"


def test_the_linker_naming_no_libcuda_is_the_cause_of_an_engine_that_failed_to_start() -> None:
    a = analyze_bytes((
        "INFO 05-27 11:47:55 [backends.py:430] Dynamo bytecode transform time: 13.06 s\n" + LINKER.rstrip("\n")
        + "\nERROR 05-27 11:47:57 [core.py:396] EngineCore failed to start.\n"
        "ERROR 05-27 11:47:57 [core.py:396] Traceback (most recent call last):\n"
        'ERROR 05-27 11:47:57 [core.py:396]   File "/x/vllm/v1/engine/core.py", line 387, in run_engine_core\n'
        "ERROR 05-27 11:47:57 [core.py:396]     engine_core = EngineCoreProc(*args, **kwargs)\n").encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == "libcuda_not_linkable"
    assert "cannot find -lcuda" in rc.message and "TRITON_LIBCUDA_PATH" in (rc.hint or "")

