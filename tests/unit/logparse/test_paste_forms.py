"""Pasted text in forms a log file never has (issue 15): a debugger's pop-up, a notebook's traceback, and
pastes cut just after the line that says what happened (NCCL's ``WARN``, a worker that died without a word),
before the traceback that follows it names anything.  The texts are written the way VS Code (debugpy),
IPython 7 and 8, NCCL and vLLM print them."""

from __future__ import annotations

import pytest

from orchestrator.logparse import analyze_bytes

FRAMES = (b'  File "/srv/train/draft/model.py", line 212, in __init__\n'
          b"    self.fc = nn.Linear(2 * config.hidden_size, config.hidden_size, bias=bias)\n"
          b'  File "/srv/train/draft/train.py", line 88, in main\n'
          b"    draft = Eagle3Draft(config)\n"
          b'  File "/srv/train/draft/train.py", line 140, in <module>\n'
          b"    main()\n")


@pytest.mark.parametrize("header", [
    b"Exception has occurred: TypeError",
    (b"Exception has occurred: TypeError       (note: full exception trace is shown but execution is paused at: "
     b"<module>)"),
])
def test_a_debuggers_pop_up_names_the_exception_and_its_message(header: bytes) -> None:
    """VS Code shows the exception first, its message on the next lines, then the frames (innermost first),
    and no exception line at the end."""
    log = header + b"\nunsupported operand type(s) for *: 'int' and 'NoneType'\n" + FRAMES
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message, a.root_cause.line_no) == (
        "TypeError", "unsupported operand type(s) for *: 'int' and 'NoneType'", 1)
    assert "train.py" in (a.root_cause.traceback or "")


def test_a_debuggers_pop_up_keeps_a_message_of_several_lines_and_its_flattened_frames() -> None:
    log = (b"Exception has occurred: ValueError\n"
           b"Draft vocabulary size mismatch:\n"
           b"  expected 32000, got 128256\n"
           + b"\n".join(line.strip() for line in FRAMES.splitlines()) + b"\n"
           + b"ValueError: Draft vocabulary size mismatch:\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and rc.exception == "ValueError"
    assert rc.message == "Draft vocabulary size mismatch:\nexpected 32000, got 128256"


def test_a_debugger_stopped_by_hand_is_not_a_failure() -> None:
    a = analyze_bytes(b"Exception has occurred: KeyboardInterrupt\nexception: no description\n" + FRAMES)
    assert not a.failed


def test_the_words_inside_a_record_are_not_a_pop_up() -> None:
    log = b"INFO 12-01 10:00:00 [runner.py:12] Exception has occurred: none, retrying the download\n"
    assert not analyze_bytes(log).failed


IPYTHON8 = b"""---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In[4], line 3
      1 from vllm import LLM, SamplingParams
----> 3 llm = LLM(model="Qwen/Qwen3-8B", speculative_config={"method": "eagle3", "model": "draft"})

File /opt/conda/lib/python3.11/site-packages/vllm/entrypoints/llm.py:285, in LLM.__init__(self, model, **kwargs)
    282     engine_args = EngineArgs(model=model, **kwargs)
--> 285 self.llm_engine = LLMEngine.from_engine_args(engine_args)

File /opt/conda/lib/python3.11/site-packages/vllm/config/speculative.py:402, in SpeculativeConfig._verify(self)
    400 def _verify(self) -> None:
    401     if self.num_speculative_tokens is None:
--> 402         raise ValueError(
    403             "num_speculative_tokens must be provided with speculative model")

ValueError: num_speculative_tokens must be provided with speculative model
"""

IPYTHON7 = b"""---------------------------------------------------------------------------
RuntimeError                              Traceback (most recent call last)
<ipython-input-3-5d1f0c2a9e51> in <module>
----> 1 llm = LLM(model="facebook/opt-125m", gpu_memory_utilization=0.99)

/usr/local/lib/python3.8/dist-packages/vllm/worker/worker.py in determine_num_available_blocks(self)
    160         if num_gpu_blocks <= 0:
--> 161             raise RuntimeError("No available memory for the cache blocks. "
    162                                "Try increasing `gpu_memory_utilization`.")

RuntimeError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.
"""


@pytest.mark.parametrize(("report", "exception", "message", "line_no"), [
    (IPYTHON8, "ValueError", "num_speculative_tokens must be provided with speculative model", 2),
    (IPYTHON7, "RuntimeError", "No available memory for the cache blocks.", 2),
], ids=["ipython8", "ipython7"])
def test_a_notebooks_traceback_names_its_exception(report: bytes, exception: str, message: str,
                                                   line_no: int) -> None:
    """IPython's frames (``Cell In[4], line 3``, ``File /x.py:285, in f``, ``/x.py in f``) and gutter lines
    (``----> 3 ...``) stand at column 0: they are frames, and the exception line at the end is the cause."""
    for form in (report, report.replace(b"\n", b"\r\n")):
        a = analyze_bytes(b"INFO 12-01 10:00:01 [llm.py:1] Loading model\n" + form)
        assert a.failed and a.root_cause is not None
        assert (a.root_cause.exception, a.root_cause.line_no) == (exception, line_no + 1)
        assert message in a.root_cause.message
        assert "Cell In[4]" in (a.root_cause.traceback or "") or "ipython-input" in (a.root_cause.traceback or "")


def test_a_notebooks_chained_traceback_keeps_the_first_exception() -> None:
    report = (b"-" * 75 + b"\nKeyError                                  Traceback (most recent call last)\n"
              b"Cell In[2], line 2\n      1 try:\n----> 2     cfg[\"draft_vocab_size\"]\n\n"
              b"KeyError: 'draft_vocab_size'\n\n"
              b"During handling of the above exception, another exception occurred:\n\n"
              + b"-" * 75 + b"\nRuntimeError                              Traceback (most recent call last)\n"
              b"Cell In[2], line 4\n----> 4     raise RuntimeError(\"bad draft config\")\n\n"
              b"RuntimeError: bad draft config\n")
    rc = analyze_bytes(report).root_cause
    assert rc is not None and (rc.exception, rc.message) == ("KeyError", "'draft_vocab_size'")
    assert "RuntimeError: bad draft config" in (rc.traceback or "")


def test_a_notebook_interrupted_by_hand_is_not_a_failure() -> None:
    report = (b"-" * 75 + b"\nKeyboardInterrupt                         Traceback (most recent call last)\n"
              b"Cell In[7], line 1\n----> 1 outputs = llm.generate(prompts, params)\n\nKeyboardInterrupt: \n")
    assert not analyze_bytes(report).failed


CUT_WORKER_TB = (
    b"(VllmWorker rank=1 pid=7412) ERROR 08-11 10:45:36 [multiproc_executor.py:511] WorkerProc failed to start.\n"
    b"(VllmWorker rank=1 pid=7412) ERROR 08-11 10:45:36 [multiproc_executor.py:511] Traceback (most recent call "
    b"last):\n"
    b'(VllmWorker rank=1 pid=7412) ERROR 08-11 10:45:36 [multiproc_executor.py:511]   File "/venv/vllm/v1/'
    b'executor/multiproc_executor.py", line 485, in worker_main\n'
    b"(VllmWorker rank=1 pid=7412) ERROR 08-11 10:45:36 [multiproc_executor.py:511]     worker = WorkerProc(*args, "
    b"**kwargs)\n")


def test_nccls_warning_of_a_cuda_failure_is_the_cause_above_a_cut_worker_traceback() -> None:
    log = (b"gpu-a:7411:7411 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
           b"gpu-a:7411:7411 [0] init.cc:416 NCCL WARN Cuda failure 'operation not supported'\n"
           b"gpu-a:7411:7411 [0] NCCL INFO init.cc:1397 -> 1\n" + CUT_WORKER_TB)
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.signature, rc.line_no) == ("nccl_error", 2)
    assert "Cuda failure 'operation not supported'" in rc.message


def test_nccls_other_warnings_are_not_a_cause() -> None:
    log = b"gpu-a:7411:7411 [0] NCCL WARN NET/IB : No device found.\nINFO 08-11 10:45:40 [api_server.py:1] ok\n"
    assert not analyze_bytes(log).failed


ENGINE_CUT_TB = (
    b"(EngineCore pid=5004) ERROR 04-03 16:43:53 [core.py:1108] EngineCore failed to start.\n"
    b"(EngineCore pid=5004) ERROR 04-03 16:43:53 [core.py:1108] Traceback (most recent call last):\n"
    b'(EngineCore pid=5004) ERROR 04-03 16:43:53 [core.py:1108]   File "/venv/vllm/v1/engine/core.py", line '
    b"1082, in run_engine_core\n"
    b"(EngineCore pid=5004) ERROR 04-03 16:43:53 [core.py:1108]     engine_core = EngineCoreProc(*args, **kwargs)\n")
DIED = (b"(EngineCore pid=5004) ERROR 04-03 16:43:52 [multiproc_executor.py:273] Worker proc VllmWorker-2 died "
        b"unexpectedly, shutting down executor.\n")


def test_a_worker_that_died_without_a_word_is_the_cause_above_a_cut_engine_traceback() -> None:
    log = b"(Worker_TP2 pid=5010) INFO 04-03 16:43:52 [kernel_warmup.py:69] Warming up FlashInfer attention.\n"
    rc = analyze_bytes(log + DIED + ENGINE_CUT_TB).root_cause
    assert rc is not None and (rc.signature, rc.line_no) == ("worker_died", 2)
    assert "VllmWorker-2 died unexpectedly" in rc.message


def test_a_symptom_after_a_cut_traceback_does_not_replace_it() -> None:
    """What the engine says after the traceback is about the traceback: its frames say more."""
    log = ENGINE_CUT_TB + b"(APIServer pid=4990) ERROR 04-03 16:43:54 [api_server.py:9] RuntimeError: Engine " \
                          b"core initialization failed. See root cause above. Failed core proc(s): {}\n"
    rc = analyze_bytes(log).root_cause
    assert rc is not None and rc.line_no == 2 and "run_engine_core" in (rc.traceback or "")


def test_a_request_handlers_traceback_cut_in_a_paste_is_not_the_servers_failure() -> None:
    """vLLM's completion handler logs one request's failure (then answers it 400); the paste ends in its
    traceback, above any line of the start-up."""
    record = b"ERROR 04-10 01:50:06 [serving_completion.py:116] "
    log = record + b"Error in preprocessing prompt inputs\n" + b"".join(record + line + b"\n" for line in (
        b"Traceback (most recent call last):",
        b'  File "/venv/vllm/entrypoints/openai/serving_completion.py", line 108, in create_completion',
        b"    request_prompts, engine_prompts = await self._preprocess_completion("))
    a = analyze_bytes(log)
    assert not a.failed and a.errors > 0
    assert analyze_bytes(log.replace(b"serving_completion.py:116", b"core.py:1108")).failed  # not a handler


def test_the_executor_failing_after_a_worker_died_is_the_deaths_symptom() -> None:
    """vLLM 0.11+: the engine's busy loop raises ``RuntimeError: Executor failed.`` for the next request once a
    worker died; the death is what happened."""
    record = b"(EngineCore_DP0 pid=5004) ERROR 01-18 22:19:26 [core.py:868] "
    tb = b"".join(record + line + b"\n" for line in (
        b"EngineCore encountered a fatal error.",
        b"Traceback (most recent call last):",
        b'  File "/venv/vllm/v1/engine/core.py", line 954, in _handle_client_request',
        b'    raise RuntimeError("Executor failed.")',
        b"RuntimeError: Executor failed."))
    serving = b'(APIServer pid=4990) INFO:     127.0.0.1:5100 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    rc = analyze_bytes(serving + DIED + tb).root_cause
    assert rc is not None and (rc.signature, rc.line_no) == ("worker_died", 2)


def test_a_notebooks_traceback_cut_before_its_exception_line_names_the_header_s_exception() -> None:
    """IPython names the exception in its header: a paste cut in the frames still says which."""
    cut = b"\n".join(IPYTHON7.split(b"\n")[:5]) + b"\n"
    for form in (cut, cut.replace(b"RuntimeError                              ", b"RuntimeError ")):  # flattened
        rc = analyze_bytes(form).root_cause
        assert rc is not None and (rc.exception, rc.line_no) == ("RuntimeError", 2)


@pytest.mark.parametrize("before", [
    b"", b"2026-12-04T09:12:44.120913377Z ", b"Dec 04 09:12:44 gpu-7 docker[2211]: ", b"  3: ",
], ids=["alone", "kubectl-timestamps", "journalctl", "srun-label"])
@pytest.mark.parametrize("column", [b"  | ", b"vllm-1  | "], ids=["name-lost", "named"])
def test_a_collectors_column_whose_name_was_lost_is_read_past(before: bytes, column: bytes) -> None:
    """``  | `` before every line (docker compose's column, its service name cut off in a paste), also when
    the paste went through another collector that put its own prefix in front (and with the name kept)."""
    log = b"".join(before + column + line + b"\n" for line in (
        b"(EngineCore_DP0 pid=6804)   File \"/venv/vllm/v1/core/kv_cache_utils.py\", line 616, in _check_enough",
        b"(EngineCore_DP0 pid=6804)     raise ValueError(",
        (b"(EngineCore_DP0 pid=6804) ValueError: No available memory for the cache blocks. Try increasing "
         b"`gpu_memory_utilization` when initializing the engine.")))
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.process) == ("ValueError", "EngineCore_DP0")
    assert rc.message.startswith("No available memory for the cache blocks.")


def test_a_symptom_naming_an_exception_says_more_than_a_cut_traceback_below_it() -> None:
    """The engine's echo of a worker's error, then the API server's traceback cut before its exception line:
    the echo (it quotes the worker's exception) is the best the paste holds."""
    log = (b"(EngineCore_DP0 pid=1482) ERROR 02-03 19:11:07 [core.py:938] RuntimeError: Worker failed with error "
           b"''ForwardContext' object has no attribute 'draft_attn_metadatas'', please check the stack trace above "
           b"for the root cause\n"
           b"(Worker_TP0 pid=1584) INFO 02-03 19:11:07 [multiproc_executor.py:707] Parent process exited, "
           b"terminating worker\n"
           b"(APIServer pid=968) ERROR 02-03 19:11:07 [async_llm.py:546] AsyncLLM output_handler failed.\n"
           b"(APIServer pid=968) ERROR 02-03 19:11:07 [async_llm.py:546] Traceback (most recent call last):\n"
           b'(APIServer pid=968) ERROR 02-03 19:11:07 [async_llm.py:546]   File "/venv/vllm/v1/engine/async_llm.py", '
           b"line 502, in output_handler\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("RuntimeError", 1)
    assert "'ForwardContext' object has no attribute 'draft_attn_metadatas'" in rc.message


@pytest.mark.parametrize("indent", [b"    ", b""], ids=["indented", "flattened"])
def test_a_frames_raise_statement_is_not_the_signature_it_quotes(indent: bytes) -> None:
    """The source line ``raise RuntimeError("Engine core initialization failed. "`` shows the symptom's text
    a line before the exception line that raises it: the exception line is the one to show."""
    log = (b"(APIServer pid=71) " + indent + b'File "/venv/vllm/v1/engine/utils.py", line 759, in '
           b"wait_for_engine_startup\n"
           b"(APIServer pid=71) " + indent + b'raise RuntimeError("Engine core initialization failed. "\n'
           b"(APIServer pid=71) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
           b"proc(s): {}\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("RuntimeError", 3)


def test_a_qualified_exception_line_after_a_flattened_source_line_is_the_cause() -> None:
    """A paste that lost its indentation and begins in the frames: the line above the exception line is a
    source line nothing marks as one, but a module-qualified exception name starts only an exception line."""
    log = (b'File "/venv/pydantic/_internal/_dataclasses.py", line 127, in __init__\n'
           b"s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)\n"
           b"pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n"
           b"Value error, num_speculative_tokens must be provided with speculative model [type=value_error, "
           b"input_value=ArgsKwargs((), {'method': 'eagle3'}), input_type=ArgsKwargs]\n")
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None
    assert a.root_cause.exception == "pydantic_core._pydantic_core.ValidationError"
    assert "num_speculative_tokens must be provided" in a.root_cause.message


def test_a_message_naming_an_exception_is_not_an_exception_line() -> None:
    log = (b"INFO 12-01 10:00:00 [loader.py:12] retrying: requests.exceptions.ConnectionError: reset by peer\n"
           b"INFO 12-01 10:00:05 [loader.py:12] Loading weights took 3.10 seconds\n")
    assert not analyze_bytes(log).failed


def test_a_cut_traceback_takes_the_text_its_record_began_with() -> None:
    """``logger.exception(e)`` writes the exception's text, then the traceback, in one record: a paste cut in
    the frames still says what failed, on the record's first line (an earlier writer's line does not)."""
    head = b"ERROR 10-11 09:00:01 engine.py:160] "
    log = (b"(VllmWorkerProcess pid=77) ERROR 10-11 09:00:00 worker.py:12] Worker heartbeat late by 3 s\n"
           + head + b"Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
           + head + b"Traceback (most recent call last):\n"
           + head + b'  File "/opt/vllm/vllm/engine/multiprocessing/engine.py", line 378, in run_mp_engine\n'
           + head + b"    engine = MQLLMEngine.from_engine_args(engine_args=engine_args,\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and rc.line_no == 2 and rc.message.startswith("Expected all tensors to be on the same")
    assert rc.traceback is not None and "run_mp_engine" in rc.traceback


RAY = (b"ERROR 05-07 08:23:58 [core.py:398] ray.exceptions.RayTaskError(RuntimeError): ray::RayWorkerWrapper."
       b"execute_method() (pid=4410, ip=127.0.0.1)\n"
       b'ERROR 05-07 08:23:58 [core.py:398]   File "/opt/vllm/vllm/executor/ray_utils.py", line 117, in setup\n'
       b"ERROR 05-07 08:23:58 [core.py:398]     torch.cuda.set_device(self.worker.device)\n")


@pytest.mark.parametrize(("tail", "exception", "message"), [
    (b"", "RuntimeError", ("ray.exceptions.RayTaskError(RuntimeError): ray::RayWorkerWrapper.execute_method() "
                           "(pid=4410, ip=127.0.0.1)")),
    (b"ERROR 05-07 08:23:58 [core.py:398] RuntimeError: CUDA error: invalid device ordinal\n", "RuntimeError",
     "CUDA error: invalid device ordinal"),
], ids=["cut", "whole"])
def test_rays_wrapper_of_a_remote_error_opens_the_workers_traceback(tail: bytes, exception: str,
                                                                    message: str) -> None:
    """A paste that begins at Ray's ``RayTaskError(X): ray::...`` line: the remote worker's frames follow; its
    exception line names the error, and when the paste is cut before it, the wrapper's line does (the worker's
    exception, in its parentheses, and where it ran)."""
    rc = analyze_bytes(RAY + tail).root_cause
    assert rc is not None and (rc.exception, rc.message) == (exception, message)


def test_a_ray_actor_that_died_is_a_failure_without_a_traceback() -> None:
    """IPython's report of ``ray.get`` ends with a blank line, then the exception: its header and the frames
    above were not pasted; the line says a worker died."""
    log = (b"--> 2549             raise value\n   2551 if is_individual_id:\n\n"
           b"RayActorError: The actor died unexpectedly before finishing this task.\n\tclass_name: RayWorker\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.signature) == ("RayActorError", "ray_worker_crashed")


def test_a_pipeline_that_says_it_gives_up_has_failed() -> None:
    """A driver script's own last word (``ERROR: ... Aborting pipeline.``) ends the job; vLLM's aborted
    requests while serving do not."""
    served = b"(APIServer pid=9) INFO 12-04 10:00:00 [async_llm.py:420] Aborted request cmpl-7f3a.\n"
    log = served + b"Terminated\nWARN: 'bench' failed (exit 143). Retrying once\nTerminated\n" + (
        b"ERROR: 'bench' failed after retry. Aborting pipeline.\n")
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "job_aborted"
    assert not analyze_bytes(served * 3).failed


REC = b"(EngineCore_DP0 pid=61) ERROR 12-04 10:00:00 [core.py:868] "
CUT_FRAMES = (REC + b'  File "/usr/lib/python3.12/asyncio/tasks.py", line 491, in _wait\n'
              + REC + b"    await waiter\n")


def test_frames_above_a_cut_tracebacks_exception_line_are_not_error_lines_of_their_own() -> None:
    """A paste beginning in the frames of a traceback vLLM logged as error records: the frames belong to the
    traceback its exception line starts, not to the log's error lines (the first of which was a frame)."""
    a = analyze_bytes(CUT_FRAMES + REC + b"RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert a.root_cause is not None and a.root_cause.exception == "RuntimeError"
    assert a.first_error is None


@pytest.mark.parametrize(("after", "failed"), [
    (b"", False),
    (REC + b"\n" + REC + b"During handling of the above exception, another exception occurred:\n" + REC + b"\n"
     + REC + b"Traceback (most recent call last):\n", True),
], ids=["alone", "chain-cut"])
def test_a_cancellation_that_led_to_another_exception_is_not_a_stop(after: bytes, failed: bool) -> None:
    """``CancelledError`` alone is a task told to stop; one that a chain goes on from (the timeout it became,
    cut off in the paste) is the failure's start, and the only exception the paste shows."""
    a = analyze_bytes(CUT_FRAMES + REC + b"asyncio.exceptions.CancelledError\n" + after)
    assert a.failed is failed
    if failed:
        assert a.root_cause is not None and a.root_cause.exception == "asyncio.exceptions.CancelledError"


@pytest.mark.parametrize(("log", "failed"), [
    (b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n", True),
    ((b"ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
      b"stored in KV cache (20000).\nTry increasing `gpu_memory_utilization`.\n"), True),
    (b"Exception ignored in: <function _releaseLock at 0x7f3a>\nINFO 12-04 10:00:00 [api_server.py:1] up\n", False),
], ids=["alone", "with-its-next-line", "not-an-exception-line"])
def test_a_paste_of_only_the_exception_line_names_it(log: bytes, failed: bool) -> None:
    """What a colleague pastes in a chat: the exception line alone, nothing above it."""
    a = analyze_bytes(log)
    assert a.failed is failed
    if failed:
        assert a.root_cause is not None and a.root_cause.line_no == 1
        assert a.root_cause.exception == log.split(b":", 1)[0].decode()


def test_a_records_traceback_with_its_indentation_lost_is_read_from_its_frames() -> None:
    """vLLM's error records of a worker's traceback, pasted as text (indentation and header lost): the frame
    line two lines above the exception line makes it one (its source line stands between them)."""
    head = b"(Worker_TP1 pid=7) ERROR 12-04 10:00:00 [multiproc_executor.py:671] "
    log = b"".join(head + line + b"\n" for line in (
        b'File "/venv/vllm/v1/worker/gpu_worker.py", line 212, in load_model',
        b"self.model_runner.load_model()",
        b"RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 1; 60.97 GiB total capacity)"))
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.process) == ("RuntimeError", "Worker_TP1")
    assert rc.message.startswith("NPU out of memory.")


@pytest.mark.parametrize("cut", [b"len (40960),\n", b"len (40960),\r\n"], ids=["lf", "crlf"])
def test_an_exception_message_cut_after_a_comma_goes_on_to_the_next_line(cut: bytes) -> None:
    """A paste wrapped after a comma: the rest of the sentence, on the next line, is still the message."""
    log = (b"ValueError: To serve at least one request with the model's max seq len " + cut
           + b"6.2 GiB KV cache is needed, which is larger than the available KV cache memory (3.1 GiB).\n"
           + b"INFO 12-04 10:00:00 [launcher.py:12] Shutting down\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and rc.exception == "ValueError"
    assert rc.message.endswith("larger than the available KV cache memory (3.1 GiB).")
    assert "Shutting down" not in rc.message


def test_a_traceback_indented_inside_pips_output_names_its_exception() -> None:
    """pip prints a build backend's traceback indented under ``[N lines of output]``: its exception line is
    at the header's indentation, and pip's own lines after it (less indented) are not its message."""
    log = (b"  Preparing editable metadata (pyproject.toml): finished with status 'error'\n"
           b"  error: subprocess-exited-with-error\n"
           b"  \xe2\x95\xb0\xe2\x94\x80> [6 lines of output]\n"
           b"      Traceback (most recent call last):\n"
           b'        File "/srv/venv/lib/python3.12/site-packages/setuptools/build_meta.py", line 313, in run_setup\n'
           b"          exec(code, locals())\n"
           b'        File "<string>", line 18, in <module>\n'
           b"      ModuleNotFoundError: No module named 'packaging'\n"
           b"      [end of output]\n"
           b"  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
           b"error: metadata-generation-failed\n")
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None
    assert (rc.exception, rc.message, rc.line_no) == ("ModuleNotFoundError", "No module named 'packaging'", 4)


def test_a_workers_error_lines_above_the_engines_cut_traceback_are_the_cause() -> None:
    """A paste that starts inside a worker's CUDA error (its exception line above the cut) and ends inside the
    engine's start-up traceback (below the cut): the worker's error line says what failed, not the engine's
    traceback, which names nothing; the engine's traceback is not shown as the worker's."""
    w = b"(VllmWorker pid=168) ERROR 08-12 14:37:42 [multiproc_executor.py:559] "
    e = b"(EngineCore_0 pid=114) ERROR 08-12 14:37:44 [core.py:718] "
    log = (w + b"CUDA kernel errors might be asynchronously reported at some other API call.\n"
           + w + b"For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
           + b"(VllmWorker pid=168) INFO 08-12 14:37:42 [multiproc_executor.py:520] Parent process exited, "
             b"terminating worker\n"
           + e + b"EngineCore failed to start.\n"
           + e + b"Traceback (most recent call last):\n"
           + e + b'  File "/v/engine/core.py", line 709, in run_engine_core\n'
           + e + b"    engine_core = EngineCoreProc(*args, **kwargs)\n")
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None
    assert (rc.process, rc.line_no) == ("VllmWorker", 1) and rc.message.startswith("CUDA kernel errors")
    assert rc.traceback is None


def test_a_flattened_paste_of_a_failed_assert_names_the_statement() -> None:
    """The last frame of a traceback pasted without its header or indentation, then a bare ``AssertionError``: a
    failure, and the ``assert`` statement is what failed."""
    log = (b'File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/parameter.py", line 133, in load_qkv\n'
           b"assert param_data.shape == loaded_weight.shape\n"
           b"AssertionError\n")
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "AssertionError"
    assert rc.message == "assert param_data.shape == loaded_weight.shape" and rc.line_no == 3


@pytest.mark.parametrize("line", [
    b"[ 9794.850361] Out of memory: Killed process 108229 (vLLM::EngineCor) total-vm:249406116kB, anon-rss:1175116kB",
    b"Dec 01 09:00:00 gpu1 kernel: Memory cgroup out of memory: Killed process 4242 (python3) total-vm:1kB",
])
def test_the_kernels_oom_kill_pasted_with_a_log_is_its_cause(line: bytes) -> None:
    """dmesg's or the journal's line for the OOM killer, pasted under the job's output: the job was killed, and
    that line says by what."""
    log = b"(EngineCore pid=108229) INFO 06-06 03:41:48 [loader.py:80] Loading weights took 412.3 seconds\n" + line + b"\n"
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None and rc.signature == "kernel_oom_kill" and rc.line_no == 2
    assert not analyze_bytes(b"INFO tip: grep dmesg for 'Killed process' after an OOM\n").failed


def test_a_tail_of_records_ending_in_a_bare_assert_names_the_statement() -> None:
    """A tail of a docker compose log: the engine's last frame as error records (its statement, the caret line
    under it), then a bare ``AssertionError``: the statement says what failed."""
    r = b"vllm-llm-1  | ERROR 03-30 02:15:01 [engine.py:160] "
    log = (r + b'  File "/v/guided_decoding/xgrammar_decoding.py", line 355, in __call__\n'
           + r + b"    assert self.matchers[i].accept_token(sampled_token)\n"
           + r + b"           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
           + r + b"AssertionError\n"
           + b"vllm-llm-1  | CRITICAL 03-30 02:15:01 [launcher.py:116] MQLLMEngine is already dead, terminating server "
             b"process\n")
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "AssertionError"
    assert rc.message == "assert self.matchers[i].accept_token(sampled_token)"
