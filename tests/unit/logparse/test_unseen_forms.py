"""Forms found by the blind sets wild149-wild156 (session 34).  Every text here is written for the test, in the
forms the real logs showed.  (pdsh's host prefix: ``test_hpc_forms.py``; rows padded to a terminal's width:
``test_padded.py``; a crash handler's segfault report: ``test_native_aborts.py``.)"""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.prefixes import parse_line

#: A logging format without a date (wild154 mc05): ``ERROR [async_llm.py:843] ...``.
STAMPLESS = [
    '(APIServer pid=1) INFO:     10.0.2.219:34696 - "POST /v1/embeddings HTTP/1.1" 400 Bad Request',
    "(APIServer pid=1) ERROR [async_llm.py:843] AsyncLLM output_handler failed.",
    "(APIServer pid=1) ERROR [async_llm.py:843] Traceback (most recent call last):",
    '(APIServer pid=1) ERROR [async_llm.py:843]   File "/srv/vllm/v1/engine/async_llm.py", line 804, in output_handler',
    "(APIServer pid=1) ERROR [async_llm.py:843]     processed_outputs = output_processor.process_outputs(",
    '(APIServer pid=1) ERROR [async_llm.py:843]   File "/srv/vllm/v1/engine/output_processor.py", line 696, in process',
    "(APIServer pid=1) ERROR [async_llm.py:843]     assert req_state.detokenizer is not None",
    "(APIServer pid=1) ERROR [async_llm.py:843] AssertionError",
    '(APIServer pid=1) INFO:     10.0.2.219:34696 - "POST /v1/embeddings HTTP/1.1" 500 Internal Server Error',
    "(APIServer pid=1) INFO:     Shutting down",
]


def test_a_record_without_a_stamp_is_a_record_and_its_traceback_is_read() -> None:
    """vLLM's records under a logging format without the date: the traceback they carry is read, and its bare
    ``AssertionError`` says which statement failed."""
    line = parse_line(STAMPLESS[1])
    assert (line.level, line.record, line.message) == ("ERROR", "ERROR  [async_llm.py:843]", "AsyncLLM output_handler failed.")
    a = analyze_bytes(("".join(line + "\n" for line in STAMPLESS)).encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process) == ("AssertionError", "APIServer")
    assert a.root_cause.message == "assert req_state.detokenizer is not None"


def test_a_word_in_brackets_after_a_level_is_no_record() -> None:
    """Only a file and line in the brackets make a record without a stamp: ``ERROR [rank0]`` does not."""
    assert parse_line("ERROR [rank0] something failed").level is None
    assert parse_line("INFO [config.py] loaded").level is None


def test_a_bare_cuda_error_line_from_every_worker_fails_a_start() -> None:
    """A paste with the prefixes taken off: a warm-up, then ``CUDA error: invalid argument`` from each worker and
    nothing after (wild156 mb02): the CUDA error is the cause."""
    log = ("Using 'MARLIN' NvFp4 MoE backend\n"
           "Warming up DeepSeek V4 sparse MLA attention for mixed tokens=16.\n" + "CUDA error: invalid argument\n" * 8)
    a = analyze_bytes(log.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.message, a.root_cause.line_no) == (
        "cuda_error", "CUDA error: invalid argument", 3)


def test_a_wrapper_of_a_bare_assertion_says_which_statement_failed() -> None:
    """torch.compile's ``InductorError: AssertionError:`` wraps an assertion without a message (wild155 md04): the
    root cause's message names the statement the innermost frame shows."""
    log = ("Traceback (most recent call last):\n"
           '  File "/srv/torch/_inductor/pattern_matcher.py", line 316, in replace_by_example\n'
           "    assert len(graph_with_eager_vals.graph.nodes) == len(\n"
           "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
           "torch._inductor.exc.InductorError: AssertionError:\n")
    rc = analyze_bytes(log.encode()).root_cause
    assert rc is not None and rc.exception == "torch._inductor.exc.InductorError"
    assert rc.message == "AssertionError: assert len(graph_with_eager_vals.graph.nodes) == len("
    plain = analyze_bytes(log.replace("assert len", "x = len").encode()).root_cause
    assert plain is not None and plain.message == "AssertionError:"


HEALTH = ("[2026-09-22 09:32:51] Health check failed. Server couldn't get a response from detokenizer for last 20 "
          "seconds. tic start time: 09:32:31. last_heartbeat time: 09:32:31\n")


def test_sglangs_detokenizer_going_silent_until_a_probe_kills_the_server_is_the_cause() -> None:
    """SGLang's health check finds the detokenizer silent, then a liveness probe's SIGTERM ends the server
    (wild155 md07): the silence is the cause."""
    log = ("[2026-09-22 09:31:23] Received output for rid='420d55af' but the state was deleted in TokenizerManager.\n"
           + HEALTH + HEALTH.replace("09:32:51", "09:33:01")
           + "[2026-09-22 09:34:39] SIGTERM received. signum=None frame=None. Draining requests and shutting down...\n"
           "[2026-09-22 09:34:40] Signal SIGTERM received while health check failed. Force exiting.\n")
    a = analyze_bytes(log.encode())
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no) == ("sglang_detokenizer_unresponsive", 2)


def test_a_health_check_the_server_recovers_from_is_not_a_failure() -> None:
    """One failed health check during a long step, then decode batches and answered requests: the server lived
    with it."""
    decode = ("[2026-09-22 09:33:{s:02d} TP0] Decode batch. #running-req: 2, #token: 27373, token usage: 0.09, "
              "gen throughput (token/s): 33.38, #queue-req: 0\n")
    log = (HEALTH + "".join(decode.format(s=s) for s in range(10, 20))
           + 'INFO:     127.0.0.1:58036 - "POST /generate HTTP/1.1" 200 OK\n')
    assert not analyze_bytes(log.encode()).failed
