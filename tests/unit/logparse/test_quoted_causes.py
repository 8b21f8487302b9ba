"""Causes that another text quotes or wraps (found by the blind sets wild56-wild63, session 27).

* a traceback printed inside an exception's message that announces it (vLLM's ``RuntimeError: Error raised in
  subprocess:``, torch.multiprocessing's ``-- Process 0 terminated with the following error:``): the other
  process's exception is what failed;
* the engine's echo of a worker's error (``Worker failed with error 'NPU out of memory ...'``) when the
  worker's own traceback is not in the log: the echo says what failed, not the engine's input dump before it
  nor the ``EngineCore encountered a fatal error`` after it;
* grep's ``--`` between groups of a traceback a script cut out of a log (``grep -A``);
* a tool-call parser's error is one response's (vLLM answers it with the text and goes on);
* a launcher's or a container runtime's line that the process exited with an error status, and Modal's
  ``Runner failed with exception``, fail a log that has nothing else.

Every text here is written for the test, in the forms the real logs showed.
"""

from __future__ import annotations

import pytest
from logforms import plain

from orchestrator.logparse import analyze_bytes

ENDINGS = ["stored", "plain"]


def _as(text: str, endings: str) -> bytes:
    return text.encode() if endings == "stored" else plain(text.encode())  # (logforms: as a copy-paste leaves it)


API = "(APIServer pid=1) ERROR 06-10 23:08:47 [registry.py:963] "
SUBPROCESS = "".join(API + line + "\r\n" for line in [
    "Error in inspecting model architecture 'Gemma4ForConditionalGeneration'",
    "Traceback (most recent call last):",
    '  File "/opt/vllm/vllm/model_executor/models/registry.py", line 1395, in _run_in_subprocess',
    "    returned.check_returncode()",
    ("subprocess.CalledProcessError: Command '['/usr/bin/python3', '-m', 'vllm.model_executor.models.registry']' "
     "returned non-zero exit status 1."),
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    '  File "/opt/vllm/vllm/model_executor/models/registry.py", line 1401, in _run_in_subprocess',
    "    raise RuntimeError(",
    "RuntimeError: Error raised in subprocess:",
    "<frozen runpy>:128: RuntimeWarning: 'vllm.model_executor.models.registry' found in sys.modules",
    "Traceback (most recent call last):",
    '  File "/opt/vllm/vllm/attention/backends/flash_attn.py", line 30, in <module>',
    "    raise ImportError(",
    "ImportError: vllm.vllm_flash_attn requires the CUDA flash attention extensions (_vllm_fa2_C or _vllm_fa3_C).",
])[:-2] + "\n"
SPAWN = """Traceback (most recent call last):
  File "/srv/train.py", line 40, in <module>
    mp.spawn(run, nprocs=2)
  File "/usr/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 215, in join
    raise ProcessRaisedException(msg, error_index, failed_process.pid)
torch.multiprocessing.spawn.ProcessRaisedException:

-- Process 1 terminated with the following error:
Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 90, in _wrap
    fn(i, *args)
  File "/srv/train.py", line 22, in run
    model = load(rank)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 1 has a total capacity of 79.1 GiB
"""


@pytest.mark.parametrize("endings", ENDINGS)
@pytest.mark.parametrize("log, exception, said", [
    (SUBPROCESS, "ImportError", "requires the CUDA flash attention extensions"),
    (SPAWN, "torch.OutOfMemoryError", "Tried to allocate 8.00 GiB"),
], ids=["vllm-subprocess", "torch-spawn"])
def test_a_traceback_inside_a_message_that_announces_it_names_the_cause(log: str, exception: str, said: str,
                                                                         endings: str) -> None:
    a = analyze_bytes(_as(log, endings))
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == exception and said in rc.message


CORE = "(EngineCore_DP0 pid=413) ERROR 11-10 12:30:57 "
ECHOED = "".join([
    CORE + "[dump_input.py:69] Dumping input data for V1 LLM engine (v0.11.0) with config: model='/m/Qwen3-VL'\n",
    CORE + "[dump_input.py:76] Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs=[])\n",
    CORE + "[core.py:710] EngineCore encountered a fatal error.\r\n",
    CORE + "[core.py:710] Traceback (most recent call last):\r\n",
    CORE + '[core.py:710]   File "/vllm/v1/executor/multiproc_executor.py", line 264, in get_response\r\n',
    CORE + "[core.py:710]     raise RuntimeError(\r\n",
    (CORE + "[core.py:710] RuntimeError: Worker failed with error 'NPU out of memory. Tried to allocate 326.00 MiB "
     "(NPU 0; 60.96 GiB total capacity)', please check the stack trace above for the root cause\n"),
    "(EngineCore_DP0 pid=413) INFO 11-10 12:30:58 [multiproc_executor.py:558] Parent process exited, terminating worker\n",
    "(APIServer pid=1) ERROR 11-10 12:30:58 [serving_chat.py:1145] Error in chat completion stream generator.\n",
])


@pytest.mark.parametrize("endings", ENDINGS)
def test_the_engines_echo_says_what_failed_when_the_workers_traceback_is_not_in_the_log(endings: str) -> None:
    a = analyze_bytes(_as(ECHOED, endings))
    rc = a.root_cause
    assert a.failed and rc is not None and rc.line_no == 4 and "NPU out of memory" in rc.message
    # What is shown with it: its own traceback, and a hint that does not send the user to one the log lacks.
    assert rc.traceback is not None and "RuntimeError: Worker failed with error 'NPU" in rc.traceback
    assert rc.hint is not None and "not in this log" in rc.hint
    assert {"input_dump", "engine_dead", "worker_failed_echo"} <= {s.id for s in a.signatures}



@pytest.mark.parametrize("endings", ENDINGS)
def test_an_echo_that_quotes_an_exception_with_its_class_names_that_exception(endings: str) -> None:
    """``Worker failed with error 'AssertionError: auto_functionalized was not removed'`` (vLLM quotes the worker's
    exception as ``repr``-like text): the root cause is that AssertionError and its message, not the engine's
    RuntimeError that carried it; a quote without a class name keeps the echo's (above)."""
    log = ECHOED.replace("NPU out of memory. Tried to allocate 326.00 MiB (NPU 0; 60.96 GiB total capacity)",
                         "AssertionError: the fused op was not removed from the graph")
    rc = analyze_bytes(_as(log, endings)).root_cause
    assert rc is not None and rc.line_no == 4
    assert (rc.exception, rc.message) == ("AssertionError", "the fused op was not removed from the graph")
    assert rc.hint is not None and "not in this log" in rc.hint
    assert rc.traceback is not None and "RuntimeError: Worker failed with error 'AssertionError" in rc.traceback

GREPPED = """Critical errors found in /srv/logs/sglang_server.log:
--- Error details ---
[2025-10-21 00:52:53 DP5 TP5] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 3043, in run_scheduler_process
--
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 1660, in init_memory_pool
    raise RuntimeError(
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.

--- End of error details ---
Killing server process and exiting...
"""


def test_greps_separator_inside_a_traceback_leaves_it_whole() -> None:
    rc = analyze_bytes(GREPPED.encode()).root_cause
    assert rc is not None and rc.exception == "RuntimeError" and rc.message.startswith("Not enough memory.")


TOOL_CALL = """INFO 06-02 10:00:00 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000
ERROR 06-02 10:01:00 [hermes_tool_parser.py:110] Error in extracting tool call from response.
Traceback (most recent call last):
  File "/vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py", line 88, in extract_tool_calls
    json.loads(match[0] if match[0] else match[1])
json.decoder.JSONDecodeError: Extra data: line 3 column 1 (char 527)
"""


def test_a_tool_call_the_parser_could_not_read_is_one_responses_trouble() -> None:
    a = analyze_bytes(TOOL_CALL.encode())
    assert not a.failed and "tool_call_unparsed" in {s.id for s in a.signatures}


@pytest.mark.parametrize("last, signature", [
    ("0s0n9esxgd0u45[error]worker exited with exit code 136", "process_exited"),
    ("qwen3.5-4b exited with code 1 (restarting)", "process_exited"),
    ("Runner failed with exception: Runner has been initializing for too long: 300 seconds", "runner_failed"),
])
def test_a_launchers_word_that_the_process_ended_badly_fails_the_log(last: str, signature: str) -> None:
    log = "INFO 05-01 12:38:19 [gpu_model_runner.py:872] Loading model weights took 5.3800 GB\n" + last + "\n"
    a = analyze_bytes(log.encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == signature and rc.line_no == 2


def test_a_process_that_exited_with_status_0_did_not_fail() -> None:
    a = analyze_bytes(b"INFO 05-01 12:38:19 [llm.py:1] done\nvllm-1 exited with code 0\n")
    assert not a.failed


WORKERS_0_10 = "".join(f"\x1b[1;36m(VllmWorker TP{r} pid=30403{r})\x1b[0;0m " + "{}\n" for r in range(2))
OFFLINE_END = ("Processed prompts: 100%|##########| 19/19 [00:21<00:00,  1.12s/it]\n"
               + WORKERS_0_10.format("INFO 09-12 02:04:51 [multiproc_executor.py:520] Parent process exited, "
                                     "terminating worker", "INFO 09-12 02:04:51 [multiproc_executor.py:520] Parent "
                                     "process exited, terminating worker"))


def test_vllm_0_10s_worker_prefix_names_the_worker() -> None:
    worker = "\x1b[1;36m(VllmWorker TP0 pid=304030)\x1b[0;0m ERROR 09-12 01:46:14 [multiproc_executor.py:596] "
    log = ("INFO 09-12 01:46:00 [llm_engine.py:1] Initializing a V1 LLM engine\n"
           + worker + "WorkerProc hit an exception.\r\n"
           + worker + "Traceback (most recent call last):\r\n"
           + worker + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 354.00 MiB.\n")
    rc = analyze_bytes(log.encode()).root_cause
    assert rc is not None and (rc.exception, rc.process) == ("torch.OutOfMemoryError", "VllmWorker TP0")


@pytest.mark.parametrize("after, failed", [
    ("Inference Finished. Saved to:  MathVista_inferenced.jsonl\nInference script finished.\n", False),
    ("", True),  # the workers' word is the last: the script may have been killed
    ("Killed\n", True),
])
def test_an_offline_script_that_wrote_on_after_its_workers_saw_it_exit_ended_on_its_own(after: str,
                                                                                      failed: bool) -> None:
    a = analyze_bytes((OFFLINE_END + after).encode())
    assert a.failed is failed and (a.root_cause is None) is not failed


RESTATED = "".join("(EngineCore pid=354) ERROR 09-13 23:01:49 [core.py:1192] " + line + "\r\n" for line in [
    "EngineCore encountered a fatal error.",
    "Traceback (most recent call last):",
    '  File "/vllm/distributed/device_communicators/shm_broadcast.py", line 631, in timeout_ms',
    "    raise TimeoutError",
    "TimeoutError",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    '  File "/vllm/v1/executor/multiproc_executor.py", line 390, in get_response',
    '    raise TimeoutError(f"RPC call to {method} timed out.") from e',
    "TimeoutError: RPC call to sample_tokens timed out."])


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_bare_exception_takes_the_words_the_next_of_its_chain_gives_it(endings: str) -> None:
    """``raise TimeoutError`` in a wait, then the caller's ``raise TimeoutError("RPC call to ... timed out.") from
    e`` (wild78 ix01): the cause is the first, in the words of the second."""
    rc = analyze_bytes(_as(RESTATED, endings)).root_cause
    assert rc is not None and (rc.exception, rc.message, rc.line_no) == (
        "TimeoutError", "RPC call to sample_tokens timed out.", 2)


WORKER = "(Worker_TP0 pid=263) ERROR 06-06 19:51:14 [multiproc_executor.py:962] "
NINJA = "".join(WORKER + line + "\n" for line in [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/subprocess.py", line 571, in run',
    "    raise CalledProcessError(retcode, process.args,",
    ("subprocess.CalledProcessError: Command '['ninja', '-v', '-C', '/root/.cache/flashinfer/cached_ops/prefill']' "
     "returned non-zero exit status 1."),
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/flashinfer/jit/cpp_ext.py", line 289, in run_ninja',
    "    raise RuntimeError(msg) from e",
    "RuntimeError: Ninja build failed. Ninja output:",
    "ninja: Entering directory `/root/.cache/flashinfer/cached_ops/batch_prefill'",
    "FAILED: [code=1] batch_prefill.so",
    "/usr/bin/ld: cannot find -lcuda: No such file or directory",
    "collect2: error: ld returned 1 exit status"])


@pytest.mark.parametrize("endings", ENDINGS)
def test_a_command_that_failed_is_named_by_the_code_that_ran_it(endings: str) -> None:
    """``CalledProcessError`` says only which command failed; flashinfer's ``RuntimeError: Ninja build failed``,
    raised from it with the build's output, says what failed (wild69 bw01, wild84 lg07). A wrapper that prints
    another traceback (vLLM's ``Error raised in subprocess:``) names that one instead (above)."""
    rc = analyze_bytes(_as(NINJA, endings)).root_cause
    assert rc is not None and rc.exception == "RuntimeError" and rc.message.startswith("Ninja build failed.")


LAZY_QUOTE = """>CUDA_VISIBLE_DEVICES=2,3 vllm serve PhilipC/HumanOmniV2 \\
  --trust-remote-code

Error:
>pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig
  Value error, The checkpoint you are trying to load has model type `qwen2_5_omni_thinker` but Transformers does not
recognize this architecture. [type=value_error, input_value=ArgsKwargs((), {'model': ...}), input_type=ArgsKwargs]
    For further information visit https://errors.pydantic.dev/2.11/v/value_error
"""


def test_an_exception_line_quoted_by_a_markdown_marker_on_its_first_line_only_is_read() -> None:
    """A Markdown quote marks only the first line of a block (the next ones are its lazy continuation): the
    marked exception line is read as the exception it quotes (wild86 au04)."""
    rc = analyze_bytes(LAZY_QUOTE.encode()).root_cause
    assert rc is not None and rc.exception == "pydantic_core._pydantic_core.ValidationError" and rc.line_no == 5
    assert "model type `qwen2_5_omni_thinker`" in rc.message


def test_old_sglangs_caught_step_error_is_one_steps_trouble() -> None:
    """SGLang 0.1's router logs ``Exception in ModelRpcClient:`` and the traceback of a step it caught, then goes
    on (found by the blind set wild121, session 31): not a failure by itself."""
    tb = ("Exception in ModelRpcClient:\n"
          "Traceback (most recent call last):\n"
          '  File ".../sglang/srt/managers/router/model_rpc.py", line 175, in exposed_step\n'
          "    self.handle_generate_request(recv_req)\n"
          '  File ".../numba/typed/dictobject.py", line 778, in impl\n'
          "    raise KeyError()\n"
          "KeyError\n")
    a = analyze_bytes((tb * 2).encode())
    assert not a.failed and a.root_cause is not None and a.root_cause.exception == "KeyError"
