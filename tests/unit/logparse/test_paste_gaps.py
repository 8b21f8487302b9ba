"""Forms found by the blind sets wild128-wild130 (session 32): frames a paster left out of a traceback, a journal
whose host was taken out, and vLLM V0's engine loop re-raising its death through an asyncio callback.  Every text
here is written for the test, in the forms the real logs showed."""

from __future__ import annotations

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.prefixes import parse_line


def _frames(n: int) -> str:
    return "".join(f'  File "/srv/app/layer{i}.py", line {10 + i}, in __getattr__\n'
                   f"    return getattr(self.inner, name)\n" for i in range(n))


@pytest.mark.parametrize("elision", ["....", "...", "…", "[...]", "(...)"])
def test_frames_left_out_of_a_paste_do_not_end_the_traceback(elision: str) -> None:
    """A long traceback pasted with its middle replaced by ``....`` (blank lines around it): the exception line
    after the rest of the frames is still what was raised."""
    text = ("INFO 08-25 22:29:19 llm_engine.py:70] Initializing an LLM engine with config: model='/m'\n"
            "Traceback (most recent call last):\n" + _frames(2) + "\n" + elision + "\n\n" + _frames(3)
            + "RecursionError: maximum recursion depth exceeded\n")
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and (rc.exception, rc.message) == ("RecursionError", "maximum recursion depth exceeded")


def test_an_elision_is_no_exception_line_but_a_word_after_frames_is() -> None:
    text = "Traceback (most recent call last):\n" + _frames(1) + "ValueError: ...\n"
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and (rc.exception, rc.message) == ("ValueError", "...")


JOURNAL_NO_HOST = (
    "Mar 18 11:23:41 systemd[1]: Started Model Server.\n"
    "Mar 18 11:23:46 model-server[931930]: Traceback (most recent call last):\n"
    'Mar 18 11:23:46 model-server[931930]:   File "/venv/lib/python3.11/site-packages/srv/config.py", line 326, in '
    "get_text_config\n"
    "Mar 18 11:23:46 model-server[931930]:     class_name = config.architectures[0]\n"
    "Mar 18 11:23:46 model-server[931930]:                  ~~~~~~~~~~~~~~~~~~~~^^^\n"
    "Mar 18 11:23:46 model-server[931930]: TypeError: 'NoneType' object is not subscriptable\n"
    "Mar 18 11:23:47 systemd[1]: model-server.service: Main process exited, code=exited, status=1/FAILURE\n"
)


def test_a_journal_pasted_without_its_host_column_is_read_through_its_stamps() -> None:
    """``journalctl`` writes ``stamp host unit[pid]: ``; a paste with the host taken out keeps ``unit[pid]: ``."""
    assert parse_line("Mar 18 11:23:46 model-server[931930]: TypeError: boom").message == "TypeError: boom"
    rc = analyze_bytes(JOURNAL_NO_HOST.encode()).root_cause
    assert rc is not None and (rc.exception, rc.message) == ("TypeError", "'NoneType' object is not subscriptable")


def test_a_word_and_a_colon_after_a_syslog_stamp_stay_the_message() -> None:
    """Without ``[pid]`` a host is what tells a journal's unit from a message's first word."""
    assert parse_line("Mar 18 11:23:46 Error: disk full").message == "Error: disk full"
    assert parse_line("Mar 18 11:23:46 gpu-box kernel: Out of memory").message == "Out of memory"


V0_LOOP_DEATH = (
    "INFO:     127.0.0.1:51234 - \"POST /v1/completions HTTP/1.1\" 500 Internal Server Error\n"
    "Exception in callback functools.partial(<function _raise_exception_on_finish at 0x7fdba4287400>, "
    "error_callback=<bound method AsyncLLMEngine._error_callback of <vllm.engine.async_llm_engine.AsyncLLMEngine "
    "object at 0x7fdbaf021510>>)\n"
    "handle: <Handle functools.partial(<function _raise_exception_on_finish at 0x7fdba4287400>)>\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/lora/worker_manager.py", line 149, in _load_lora\n'
    "    lora = self._lora_model_cls.from_local_checkpoint(\n"
    "FileNotFoundError: [Errno 2] No such file or directory: 'org/adapter/adapter_config.json'\n"
    "\n"
    "The above exception was the direct cause of the following exception:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/engine/async_llm_engine.py", line 38, in '
    "_raise_exception_on_finish\n"
    "    task.result()\n"
    "vllm.engine.async_llm_engine.AsyncEngineDeadError: Task finished unexpectedly. This should never happen!\n"
)


def test_v0s_engine_loop_dying_through_its_callback_is_a_failure_and_its_chain_says_why() -> None:
    """asyncio's ``Exception in callback`` is usually lived with; vLLM V0's ``_raise_exception_on_finish`` is the
    engine's background loop re-raising what killed it."""
    analysis = analyze_bytes(V0_LOOP_DEATH.encode())
    assert analysis.failed
    assert analysis.root_cause is not None and analysis.root_cause.exception == "FileNotFoundError"
    assert "asyncio_callback_exception" not in {s.id for s in analysis.signatures}
