"""Forms the blind sets of session 44 found (wild188 on).  Every text here is written for the test, in the forms
the real logs showed; the sets themselves stay a measure (``bench/verdict_score.py tests/data/wild188``)."""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes


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
