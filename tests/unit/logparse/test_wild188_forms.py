"""Forms the blind sets of session 44 found (wild188 on).  Every text here is written for the test, in the forms
the real logs showed; the sets themselves stay a measure (``bench/verdict_score.py tests/data/wild188``)."""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.prefixes import parse_line


def _log(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


#: transformers asking whether to run a model repository's code, on stdout, between the frame line and its
#: source line (stderr) of the traceback its ``input()`` raised in a container with no terminal (wild188's form).
_PROMPTED = [
    "INFO 02-08 08:40:55 llm_engine.py:70] Initializing an LLM engine with config: model='org/custom-model'",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3/site-packages/transformers/dynamic_module_utils.py", line 598, in resolve_trust_remote_code',
    "The repository for org/custom-model contains custom code which must be executed to correctly load the model.",
    "You can avoid this prompt in future by passing the argument `trust_remote_code=True`.",
    "",
    "    answer = input(",
    "EOFError: EOF when reading a line",
]


def test_a_programs_prompt_between_a_frame_and_its_source_line_is_not_the_exception() -> None:
    a = analyze_bytes(_log(*_PROMPTED))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message) == ("EOFError", "EOF when reading a line")
    assert a.root_cause.traceback is not None and "contains custom code" not in a.root_cause.traceback


def test_a_line_that_can_be_an_exception_line_after_a_frame_still_is_one() -> None:
    """Only lines no exception line starts so are taken for printed output: a frame with no source line shown,
    then the exception line, is read as before."""
    a = analyze_bytes(_log("Traceback (most recent call last):", '  File "<string>", line 1, in <module>',
                           "socket.timeout: timed out"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message) == ("socket.timeout", "timed out")


def test_dashs_command_not_found_in_a_job_script_fails_the_log() -> None:
    """``/bin/sh`` (dash) says ``run.sh: 18: source: not found`` where bash says ``line 18: ...: command not
    found``; the job script's own ``[ERROR]`` line after it is what it led to (wild189's form)."""
    a = analyze_bytes(_log("[INFO] Activating environment on node", "run.sh: 18: source: not found",
                           "[ERROR] Failed to activate environment"))
    assert a.failed and a.root_cause is not None
    assert a.root_cause.signature == "command_not_found" and "source: not found" in a.root_cause.message
    assert a.root_cause.hint is not None and "bash" in a.root_cause.hint


def test_a_not_found_that_is_no_shells_is_no_missing_command() -> None:
    a = analyze_bytes(_log("INFO 05-02 10:00:01 [api_server.py:900] model: not found in cache, downloading",
                           "INFO 05-02 10:00:09 [api_server.py:1000] Starting vLLM API server on http://0.0.0.0:8000"))
    assert not a.failed


def test_a_request_longer_than_the_context_pasted_alone_then_the_engines_stats_is_lived_with() -> None:
    """vLLM's answer to a too-long request, pasted as its exception line alone, then the engine's periodic stats
    with their first fields elided (wild190's form): one request failed, the server went on."""
    a = analyze_bytes(_log(
        "ValueError: This model's maximum context length is 40000 tokens. However, your request has 78344 input "
        "tokens. Please reduce the length of the input messages.",
        "INFO 10-14 16:59:08 [loggers.py:123] Engine 000: ..., GPU KV cache usage: 4.7%",
        "...",
        "INFO 10-14 17:04:08 [loggers.py:123] Engine 000: ..., GPU KV cache usage: 3.1%"))
    assert not a.failed


def test_a_request_longer_than_the_context_that_ends_an_offline_script_fails_it() -> None:
    a = analyze_bytes(_log(
        "Traceback (most recent call last):", '  File "/app/gen.py", line 12, in <module>',
        "    outputs = llm.generate(prompts, params)",
        "ValueError: This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."))
    assert a.failed and a.root_cause is not None and a.root_cause.exception == "ValueError"


def test_transformers_unknown_model_type_wrapped_after_but_is_read() -> None:
    """The message wrapped over two lines, no exception class and no level in front (wild190's form)."""
    a = analyze_bytes(_log("The checkpoint you are trying to load has model type `gemma4` but",
                           "Transformers does not recognize this architecture."))
    assert a.failed and a.root_cause is not None and a.root_cause.signature == "model_type_unknown"


#: A notebook's report of ``LLM(...)`` failing, pasted from the middle of its frames to the middle of the last
#: one's context lines: IPython's frame lines and numbered context lines, no header, no exception line (wild187).
_IPYTHON_FRAMES = [
    "    712 )",
    "--> 714 self.language_model = init_vllm_registered_model(",
    "    715     vllm_config=vllm_config,",
    "",
    ("File ~/venvs/vllm/lib/python3.12/site-packages/vllm/model_executor/model_loader/loader.py:127, in "
     "_initialize_model(vllm_config, prefix)"),
    "    125     # new-style model class",
    "    126     with set_current_vllm_config(vllm_config, check_compile=True):",
    "--> 127         return model_class(vllm_config=vllm_config, prefix=prefix)",
    '    129 msg = ("vLLM model class should accept `vllm_config` and `p',
]


def test_a_notebooks_frames_cut_before_the_exception_line_failed() -> None:
    a = analyze_bytes(_log(*_IPYTHON_FRAMES))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.line_no) == (None, 5)
    assert a.root_cause.traceback is not None and "--> 127" in a.root_cause.traceback


def test_a_notebooks_frame_followed_by_other_output_is_no_cut_traceback() -> None:
    """The frame line and its context, then a line of another kind (the cell went on, or its output was pasted
    after): not a report cut in its frames."""
    a = analyze_bytes(_log(*_IPYTHON_FRAMES, "Processed prompts: 100%|##########| 4/4"))
    assert not a.failed


def test_a_databricks_cells_exception_line_above_its_frame_is_the_cause() -> None:
    """Databricks prints a cell's exception line first, then where it was raised: the cell's frame line and its
    context lines, the line that ran behind an arrow (wild187's form)."""
    a = analyze_bytes(_log(
        "vLLM STDOUT: INFO 05-13 23:43:20 [__init__.py:239] Automatically detected platform cuda.",
        "Stdout stream ended before readiness message detected.",
        "RuntimeError: Unsloth: vllm_process failed to load!",
        "File <command-8946128544250743>, line 3",
        "      1 from unsloth.dataprep import SyntheticDataKit",
        "----> 3 generator = SyntheticDataKit.from_pretrained(",
        '      4     model_name = "unsloth/Llama-3.2-3B-Instruct",'))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.line_no) == ("RuntimeError", 3)
    assert "vllm_process failed to load" in a.root_cause.message



def test_an_excerpt_of_a_workers_exception_as_the_executor_reports_it_fails_the_log() -> None:
    """Only the indented lines of an NPU kernel's error message, each headed by the executor's record in a worker
    (wild193's form): the worker hit an exception, fatal to the engine."""
    head = "(Worker pid=9411) (Worker_DP0_TP6_EP6 pid=9411) ERROR 03-25 01:52:21 [multiproc_executor.py:880]        "
    a = analyze_bytes(_log(head + "Check NnopbaseExecutorDoTiling(executor) failed",
                           head + "Check NnopbaseRunForWorkspace(*executor, workspaceSize) failed"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.signature, a.root_cause.process) == ("worker_exception", "Worker_DP0_TP6_EP6")
    assert "NnopbaseExecutorDoTiling" in a.root_cause.message


def test_a_frame_fragment_in_a_workers_records_is_not_taken_for_its_message() -> None:
    """A caret line, a frame line and the source line under it: the traceback's frames, not its message."""
    head = "(Worker_DP0_EP0 pid=26) ERROR 05-20 10:42:56 [multiproc_executor.py:962] "
    a = analyze_bytes(_log(head + "           ^^^^^^^^^^^^",
                           head + '  File "/opt/vllm/model_executor/models/deepseek_v2.py", line 1067, in forward',
                           head + "    return self.mla_attn(positions, hidden_states)"))
    assert a.root_cause is None or a.root_cause.signature != "worker_exception"


def test_v0s_engine_error_logged_after_the_servers_already_dead_line_is_the_cause() -> None:
    """The API server's ``MQLLMEngine is already dead`` first, then the engine's own record of its exception (as
    ``repr(e)``) and its traceback, cut after the header (wild195's form)."""
    a = analyze_bytes(_log(
        "CRITICAL 11-20 19:56:18 launcher.py:99] MQLLMEngine is already dead, terminating server process",
        'INFO:     127.0.0.1:34172 - "POST /v1/embeddings HTTP/1.1" 500 Internal Server Error',
        "ERROR 11-20 19:56:18 engine.py:135] RuntimeError('stack expects each tensor to be equal size')",
        "ERROR 11-20 19:56:18 engine.py:135] Traceback (most recent call last):"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message) == ("RuntimeError", "stack expects each tensor to be equal size")


def test_a_shippers_stamp_with_a_blank_before_its_offset_and_the_zones_name_is_a_collectors() -> None:
    """``2025-10-24T17:12:08.363544040 +08:00 CST `` in front of each line (wild193's form): the record behind it
    is read, not kept in the message."""
    line = parse_line("2025-10-24T17:12:08.363544040 +08:00 CST (APIServer pid=1) ERROR 10-24 17:12:08 "
                      "[async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.")
    assert (line.process, line.level) == ("APIServer", "ERROR")
    assert line.message.startswith("vllm.v1.engine.exceptions.EngineDeadError")


def test_a_job_runners_bracketed_stamp_with_its_offset_and_the_jobs_name_is_a_collectors() -> None:
    """``[2025-12-18T16:24:02+08:00] job-name >> `` in front of each line (wild192's form): the scheduler's
    traceback behind it is read as it is without it."""
    head = "[2025-12-18T16:24:02+08:00] rl-eagle3-20251218-162008s-3da56-cfcd2 >> (SGLangEngine pid=3111) "
    a = analyze_bytes(_log(head + "[2025-12-18 08:24:01 TP7] Scheduler hit an exception: Traceback (most recent "
                                  "call last):",
                           head + '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2683, in run',
                           head + "    scheduler.event_loop_normal()",
                           head + "ValueError: bad batch"))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message) == ("ValueError", "bad batch")


def test_interleaved_workers_frames_are_not_taken_for_a_workers_message() -> None:
    """Workers' tracebacks interleaved, the paste begun in their frames (wild109's form): a worker's source line
    whose own frame line is not above it is still a frame's, and the engine's echo names what failed."""
    a = analyze_bytes(_log(
        "ERROR 06-13 15:32:09 [core.py:515] RuntimeError: Worker failed with error 'Expected result >= 0 to be "
        "true, but got false.', please check the stack trace above for the root cause",
        "(VllmWorker rank=1 pid=11) ERROR 06-13 15:32:09 [multiproc_executor.py:527]   File "
        '"/opt/vllm/compilation/cuda_piecewise_backend.py", line 156, in __call__',
        "(VllmWorker rank=2 pid=12) ERROR 06-13 15:32:09 [multiproc_executor.py:527]     return entry.runnable(*args)"))
    assert a.root_cause is not None and a.root_cause.signature != "worker_exception"
    assert "Expected result >= 0" in a.root_cause.message
