"""A script that relays its child's output through its own logger, line by line (issue 15): olmocr's pipeline
logs SGLang's stderr at INFO, a launcher logs vLLM's with ``logging.info(line)``.  Every line of the child's
traceback is then a record of the script's at the script's level: what the child died of, not a traceback the
script logged at INFO and lived with (Python's logging heads only a record's first line)."""

from __future__ import annotations

import pytest

from orchestrator.logparse import analyze_bytes

_TRACEBACK = """Traceback (most recent call last):
  File "/opt/app/serve.py", line 88, in main
    cfg = json.loads(raw)
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode
    raise JSONDecodeError("Expecting value", s, err.value) from None
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)""".splitlines()
_AFTER = ("2025-04-02 10:11:12,400 - launcher - WARNING - server task ended\n"
          "2025-04-02 10:11:12,401 - launcher - ERROR - the server failed 3 times, cancelling the pipeline\n")
HEADS = {"cookbook": "2025-04-02 10:11:12,345 - launcher - INFO - ", "basicConfig": "INFO:root:",
         "loguru": "2025-04-02 10:11:12.345 | INFO     | launcher:relay:41 - "}


@pytest.mark.parametrize("head", HEADS.values(), ids=list(HEADS))
@pytest.mark.parametrize("cut", [0, 3], ids=["whole", "cut above"])
def test_a_childs_traceback_relayed_line_by_line_at_info_is_what_it_died_of(head: str, cut: int) -> None:
    log = "".join(head + line + "\n" for line in _TRACEBACK[cut:]) + _AFTER
    a = analyze_bytes(log.encode())
    rc = a.root_cause
    assert a.failed and rc is not None, rc
    assert rc.exception == "json.decoder.JSONDecodeError" and rc.message == "Expecting value: line 1 column 1 (char 0)"
    assert rc.line_no == len(_TRACEBACK) - cut if cut else rc.line_no == 1


def test_a_traceback_vllm_logged_at_warning_on_every_line_is_lived_with() -> None:
    """vLLM's logger heads every line of a record too, but ends its header with ``[file.py:N]``: a traceback it
    logged at WARNING is one it went on from, not a child's relayed output."""
    head = "WARNING 11-29 10:02:30 [utils.py:50] "
    log = ("INFO 11-29 10:02:27 [api_server.py:100] Starting vLLM API server on http://0.0.0.0:8000\n"
           + "".join(head + line + ("\r\n" if i < len(_TRACEBACK) - 1 else "\n") for i, line in enumerate(
               ["Could not read the chat template; using the default: " + _TRACEBACK[0], *_TRACEBACK[1:]]))
           + "INFO:     Application startup complete.\n")
    a = analyze_bytes(log.encode())
    assert not a.failed, a.root_cause
