"""How pasted logs end (issue 15): the shell's word for a killed process, a C++ backtrace's frames around the
message that matters, a front end's traceback answered with a 4xx (one request's failure, not the job's), and
the client sockets an engine that died leaves behind.  The texts are written the way bash, zsh, Slurm,
PyTorch, asyncio and vLLM print them."""

from __future__ import annotations

import pytest

from orchestrator.logparse import analyze_bytes

START = (b"INFO 11-20 10:45:55 model_runner.py:680] Starting to load model /models/qwen...\n"
         b"Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:01<00:00,  1.23s/it]\n"
         b"INFO 11-20 10:45:57 model_runner.py:692] Loading model weights took 1.9900 GB\n"
         b"INFO 11-20 10:45:57 gpu_executor.py:102] # GPU blocks: 12453, # CPU blocks: 2730\n")


@pytest.mark.parametrize("last", [
    b"Killed",
    b"Segmentation fault (core dumped)",
    b"Aborted (core dumped)",
    b"./serve.sh: line 14: 48213 Killed                  vllm serve /models/qwen --swap-space 64",
    b"zsh: killed     vllm serve /models/qwen",
    b"srun: error: gpu-node-3: task 0: Killed",
    b"slurmstepd: error: Detected 1 oom_kill event in StepId=5512.0. Some of the step tasks have been OOM Killed.",
])
def test_the_shells_word_for_a_killed_process_is_the_cause(last: bytes) -> None:
    a = analyze_bytes(START + last + b"\n")
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.line_no, a.root_cause.message) == (
        "shell_killed", 5, last.decode())
    assert "OOM killer" in (a.root_cause.hint or "")


@pytest.mark.parametrize("line", [
    b"INFO 11-20 10:46:01 launcher.py:27] Killed 3 stale workers from an earlier run",
    b"WARNING 11-20 10:46:01 utils.py:12] The process may be Killed by the OOM killer if swap is too large",
])
def test_the_word_inside_a_record_is_not_a_kill(line: bytes) -> None:
    assert not analyze_bytes(START + line + b"\n").failed


def test_a_cpp_backtrace_frame_naming_nccl_is_not_the_cause() -> None:
    """A paste that begins in the frames of PyTorch's C++ backtrace (``ncclCommWatchdog`` names NCCL and a
    watchdog, nothing more): the watchdog's own line below it is the cause."""
    log = (b"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f10 in /torch/lib/libtorch_cuda.so)\n"
           b"frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c (0x7f11 in /torch/lib/libtorch_cuda.so)\n"
           b"frame #4: <unknown function> + 0xdbbf4 (0x7f12 in /lib/libstdc++.so.6)\n"
           b"\n"
           b"[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: "
           b"WorkNCCL(SeqNum=7, OpType=ALLGATHER, NumelIn=8, NumelOut=64, Timeout(ms)=600000) ran for 600012 "
           b"milliseconds before timing out.\n"
           b"[rank3]:[E ProcessGroupNCCL.cpp:583] [Rank 3] To avoid data inconsistency, we are taking the entire "
           b"process down.\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.signature, rc.line_no, rc.process) == ("nccl_error", 5, "rank3")
    assert "Watchdog caught collective operation timeout" in rc.message


FRONT_END_TB = (
    b'ERROR 02-08 11:19:09 serving_chat.py:193]   File "/py/json/decoder.py", line 356, in raw_decode\n'
    b'ERROR 02-08 11:19:09 serving_chat.py:193]     raise JSONDecodeError("Expecting value", s, err.value)\n'
    b"ERROR 02-08 11:19:09 serving_chat.py:193] json.decoder.JSONDecodeError: Expecting value: line 1 column 1\n")


def test_a_front_end_traceback_answered_with_a_4xx_is_one_requests_failure() -> None:
    """A paste cut into a serving log: the API server's traceback, then uvicorn answering that request 400
    and the next ones 200: one request failed, the server went on."""
    log = FRONT_END_TB + (b'INFO:     10.0.0.5:1886 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'
                          b'INFO:     10.0.0.5:1890 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
    a = analyze_bytes(log)
    assert not a.failed and a.root_cause is None and a.errors > 0


def test_a_request_handlers_traceback_is_one_requests_failure_whatever_the_answer() -> None:
    """``serving_chat.py`` logs a request's failure and answers it (500 for a bug of its own): the traceback is
    offered as the cause should the server die next, but the server has not failed yet; it is the same with
    no answer in the paste (cut there) and above the start-up."""
    for after in (b'INFO:     10.0.0.5:1886 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n', b""):
        a = analyze_bytes(FRONT_END_TB + after)
        assert not a.failed
        assert a.root_cause is not None and a.root_cause.exception == "json.decoder.JSONDecodeError"


def test_a_front_end_traceback_of_another_module_answered_with_a_5xx_stays_a_cause() -> None:
    log = FRONT_END_TB.replace(b"serving_chat.py", b"api_server.py") + (
        b'INFO:     10.0.0.5:1886 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n')
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None and a.root_cause.exception == "json.decoder.JSONDecodeError"


def test_an_engine_traceback_before_a_4xx_stays_a_cause() -> None:
    """Only the front end answers requests: a worker's traceback just before a 400 is still the job's."""
    log = FRONT_END_TB.replace(b"ERROR 02-08", b"(VllmWorkerProcess pid=7) ERROR 02-08") + (
        b'INFO:     10.0.0.5:1886 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n')
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None and a.root_cause.process == "VllmWorkerProcess"


def _zmq_closed(task: int) -> bytes:
    return (b"Task exception was never retrieved\n"
            b"future: <Task finished name='Task-%d' coro=<MQLLMEngineClient.run_output_handler_loop() done> "
            b"exception=ZMQError('Operation not supported')>\n"
            b"Traceback (most recent call last):\n"
            b'  File "/v/engine/multiprocessing/client.py", line 184, in run_output_handler_loop\n'
            b"    while await self.output_socket.poll(timeout=VLLM_RPC_TIMEOUT\n"
            b'  File "/zmq/_future.py", line 400, in poll\n'
            b"    raise _zmq.ZMQError(_zmq.ENOTSUP)\n"
            b"zmq.error.ZMQError: Operation not supported\n") % task


def test_sockets_closed_under_the_client_are_not_the_cause_of_an_engine_that_died() -> None:
    """vLLM 0.6's engine process dies without a word after sizing its cache: asyncio reports each client
    task's ``ZMQError`` (its socket closed under it), then the API server says the engine failed to start:
    that is what the log can say, not the sockets."""
    log = (START + _zmq_closed(2) + _zmq_closed(3) + b"Traceback (most recent call last):\n"
           b'  File "/v/entrypoints/openai/api_server.py", line 210, in build_async_engine_client_from_engine_args\n'
           b"    raise RuntimeError(\n"
           b"RuntimeError: Engine process failed to start. See stack trace for the root cause.\n")
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.signature) == ("RuntimeError", "engine_start_failed_echo")
    assert {s.id: s.count for s in a.signatures}["zmq_socket_closed"] == 2


def test_closed_sockets_alone_still_say_something_died() -> None:
    a = analyze_bytes(START + _zmq_closed(2))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "zmq_socket_closed"


_FRAMES = [
    '  File "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1520, in _call_impl',
    "    return forward_call(*args, **kwargs)",
    '  File "/usr/lib/python3.10/site-packages/vllm/model_executor/layers/rotary_embedding.py", line 212, in forward',
    "    cos_sin = self.cos_sin_cache[positions]",
]


@pytest.mark.parametrize("indent", [True, False], ids=["indented", "flattened"])
@pytest.mark.parametrize("upto", [3, 4, 5, 6], ids=["at a frame line", "at its source line", "at its caret line",
                                                    "at a cut line after them"])
def test_a_paste_of_frames_cut_above_the_exception_line_is_a_cut_traceback(indent: bool, upto: int) -> None:
    """Only a traceback's frames, its header above the paste and its exception line below it (and, last, a line
    the paste cut short): the log ends inside a traceback (failed, its cause cut off), not "stops during start-up
    with no error"."""
    frames = [line if indent else line.strip() for line in (*_FRAMES, "              ^^^^^^^^^^^^^^^^^", "Aug 19 1")[:upto]]
    a = analyze_bytes(START + "\n".join(frames).encode() + b"\n")
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception is None
    assert rc.line_no == 7 and rc.traceback is not None and "rotary_embedding.py" in rc.traceback


def test_frames_followed_by_more_log_are_not_where_the_log_ends() -> None:
    a = analyze_bytes(START + "\n".join(_FRAMES).encode() + b"\nINFO 11-20 10:46:01 api_server.py:212] Serving\n")
    assert not a.failed


def test_a_cut_traceback_under_uvicorns_level_word_names_its_last_frame_not_the_word() -> None:
    """uvicorn writes ``ERROR:    Traceback (most recent call last):``; cut before the exception line, the cause
    says where it was cut, not "ERROR"."""
    log = START + b"ERROR:    Traceback (most recent call last):\n" + "\n".join(_FRAMES).encode() + b"\n"
    rc = analyze_bytes(log).root_cause
    assert rc is not None and rc.message.startswith("cut before its exception line; last frame rotary_embedding.py:212")
