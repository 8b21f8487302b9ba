"""What an error says, told on later lines (session 31).

* a dead process's own error, logged after another process said it died (found by the blind set wild111):
  vLLM's V0 front end sees the engine process gone and says so first, then the engine's ``logger.exception``
  record arrives;
* pydantic's ``N validation error(s) for X`` in a record of a logger that prefixes only a record's first line:
  the reason is on the unprefixed lines after it;
* a thread's raw traceback with another thread's log records between its lines.

Every text here is written for the test, in the forms the real logs showed."""

from __future__ import annotations

import re

import pytest

from orchestrator.logparse import analyze_bytes

_E = "ERROR 03-14 09:12:07 engine.py:135] "
DEAD_THEN_TOLD = (
    "INFO 03-14 09:12:06 engine.py:267] Added request chatcmpl-5f0c.\n"
    "CRITICAL 03-14 09:12:07 launcher.py:99] MQLLMEngine is already dead, terminating server process\n"
    'INFO:     127.0.0.1:50312 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
    + _E + "RuntimeError('Error in model execution: index 7 is out of bounds for dimension 0 with size 7')\n"
    + _E + "Traceback (most recent call last):\n"
    + _E + '  File "/env/vllm/worker/model_runner.py", line 1654, in execute_model\n'
    + _E + "    hidden_states = model_executable(\n"
    + _E + "IndexError: index 7 is out of bounds for dimension 0 with size 7\n"
    + _E + "\n"
    + _E + "The above exception was the direct cause of the following exception:\n"
    + _E + "\n"
    + _E + "Traceback (most recent call last):\n"
    + _E + '  File "/env/vllm/engine/multiprocessing/engine.py", line 133, in start\n'
    + _E + "    self.run_engine_loop()\n"
    + _E + "RuntimeError: Error in model execution: index 7 is out of bounds for dimension 0 with size 7\n"
    "INFO:     Shutting down\n"
)


@pytest.mark.parametrize("endings", ["stored", "normalised"])
def test_the_dead_engines_own_traceback_logged_late_is_the_cause(endings: str) -> None:
    text = DEAD_THEN_TOLD if endings == "stored" else re.sub(r"\r\n?", "\n", DEAD_THEN_TOLD)
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "IndexError"  # the chain's first link
    assert "index 7 is out of bounds" in a.root_cause.message


def test_without_its_traceback_the_death_stays_the_root() -> None:
    """An error line after the death that names an exception but shows no traceback (a request the dead engine
    could not answer) is what the death did: the death stays the root."""
    text = DEAD_THEN_TOLD.split(_E + "Traceback")[0]
    a = analyze_bytes(text.encode())
    assert a.failed and a.root_cause is not None
    assert a.root_cause.signature == "engine_process_died"


PYDANTIC_RECORD = (
    "2025-06-27 18:12:39,114 - server - INFO - starting vLLM for Qwen/Qwen3-30B-A3B\n"
    "2025-06-27 18:12:41,502 - server - ERROR - pydantic_core._pydantic_core.ValidationError: 1 validation error"
    " for ParallelConfig\n"
    "  Value error, World size (2) is larger than the number of available GPUs (1) in this node. [type=value_error,"
    " input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]\n"
    "    For further information visit https://errors.pydantic.dev/2.11/v/value_error\n"
    "2025-06-27 18:12:41,503 - server - INFO - exiting with status 1\n"
)


def test_a_records_validation_error_carries_the_unprefixed_lines_after_it() -> None:
    a = analyze_bytes(PYDANTIC_RECORD.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "pydantic_core._pydantic_core.ValidationError"
    assert "World size (2) is larger than the number of available GPUs (1)" in rc.message
    assert "exiting with status" not in rc.message  # the next record is not part of it


def test_an_indented_line_after_another_records_exception_is_not_its_message() -> None:
    """Only pydantic's message goes on past its record: after any other exception, an unprefixed line belongs to
    whoever wrote it."""
    text = PYDANTIC_RECORD.replace("pydantic_core._pydantic_core.ValidationError: 1 validation error for",
                                   "ValueError: bad value for")
    a = analyze_bytes(text.encode())
    rc = a.root_cause
    assert rc is not None and rc.exception == "ValueError" and "World size" not in rc.message


INTERLEAVED = (
    "INFO 07-19 16:09:20 llm_engine.py:1] Initializing an LLM engine (v0.5.0)\n"
    "Exception in thread Thread-3:\n"
    "Traceback (most recent call last):\n"
    '  File "/env/threading.py", line 1016, in _bootstrap_inner\n'
    "    self.run()\n"
    "INFO 07-19 16:09:21 metrics.py:295] Avg prompt throughput: 84.8 tokens/s, Running: 1 reqs\n"
    '  File "/env/worker.py", line 12, in loop\n'
    "    step()\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
)


def test_a_raw_traceback_goes_on_past_another_threads_records() -> None:
    """A thread's traceback, written line by line by Python's excepthook while the process goes on logging: the
    records between its lines do not end it, and it keeps all its frames."""
    rc = analyze_bytes(INTERLEAVED.encode()).root_cause
    assert rc is not None and rc.exception == "RuntimeError" and rc.line_no == 3
    assert rc.traceback is not None and "worker.py" in rc.traceback and "threading.py" in rc.traceback
    assert "metrics.py" not in rc.traceback


def test_records_then_a_line_of_no_exception_end_a_raw_traceback_cut() -> None:
    """A traceback cut short, then the log going on: the first raw line after the records is not taken for its
    exception line."""
    cut = INTERLEAVED.split('  File "/env/worker.py"')[0] + "Starting the next job\n"
    rc = analyze_bytes(cut.encode()).root_cause
    assert rc is not None and rc.exception is None and "Starting the next job" not in rc.message


SGLANG = (
    "[2025-05-28 06:32:50 TP0] Load weight end. type=Qwen3ForCausalLM, avail mem=20.1 GB\n"
    "Exception in thread Thread-5 (transfer_thread):\n"
    "E0528 06:32:54.254386 735017 tcp_transport.cpp:136] Session::writeBody failed. Error: Bad address (value: 14)\n"
    "Traceback (most recent call last):\n"
    "[2025-05-28 06:32:54 TP0] Mooncake Transfer Engine Return Error.\n"
    '  File "/env/threading.py", line 1016, in _bootstrap_inner\n'
    "    self.run()\n"
    "[2025-05-28 06:32:54 TP0] Mooncake Transfer Engine Return Error.\n"
    '  File "/env/sglang/srt/disaggregation/mooncake/transfer_engine.py", line 70, in transfer_sync\n'
    '    raise RuntimeError("Mooncake Transfer Engine Return Error.")\n'
    "E0528 06:32:54.257701 735017 tcp_transport.cpp:136] Session::writeBody failed. Error: Bad address (value: 14)\n"
    "RuntimeError: Mooncake Transfer Engine Return Error.\n"
    "[2025-05-28 06:32:54 TP0] Mooncake Transfer Engine Return Error.\n"
)


def test_sglangs_records_between_a_threads_traceback_lines_do_not_take_it_apart() -> None:
    """SGLang's ``[ts TP0]`` records (they mark only a record's first line) and glog's lines, written while a
    thread's traceback is printed: the traceback is whole and names its exception."""
    rc = analyze_bytes(SGLANG.encode()).root_cause
    assert rc is not None and rc.exception == "RuntimeError" and rc.line_no == 4
    assert rc.message == "Mooncake Transfer Engine Return Error."
    assert rc.traceback is not None and "transfer_engine.py" in rc.traceback and "[2025-" not in rc.traceback


def test_sglangs_scheduler_traceback_keeps_its_frames_after_its_record() -> None:
    text = ("[2025-06-10 08:11:53 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sgl/managers/scheduler.py", line 2295, in run_scheduler_process\n'
            "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)\n"
            "AttributeError: 'Qwen2ForCausalLM' object has no attribute 'set_eagle3_layers_to_capture'\n"
            "\n"
            "[2025-06-10 08:11:53] Received sigquit from a child process. It usually means the child failed.\n")
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and rc.exception == "AttributeError" and rc.line_no == 1
    assert rc.traceback is not None and "scheduler.py" in rc.traceback
