"""A dead process's own error, logged after another process said it died (found by the blind set wild111,
session 31).  Every text here is written for the test, in the form the real log showed: vLLM's V0 front end
sees the engine process gone and says so first, then the engine's ``logger.exception`` record arrives."""

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
