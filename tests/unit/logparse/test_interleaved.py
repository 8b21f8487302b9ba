"""Tracebacks of several processes written to one stderr (torchrun's ranks, an agent and its workers): the
frames another process prints right after one's exception line are not that exception's message."""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes

_FIRST = ("Traceback (most recent call last):\n"
          '  File "/usr/lib/python3.12/site-packages/torch/distributed/run.py", line 892, in main\n'
          "    run(args)\n"
          "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
          "port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n")
_OTHER = ("    result = agent.run()\n"
          "             ^^^^^^^^^^^\n"
          '  File "/usr/lib/python3.12/site-packages/torch/distributed/elastic/metrics/api.py", line 138, in wrapper\n'
          "    result = f(*args, **kwargs)\n")


def test_another_processs_frames_after_an_exception_line_are_not_its_message() -> None:
    rc = analyze_bytes((_FIRST + _OTHER).encode()).root_cause
    assert rc is not None and rc.exception == "torch.distributed.DistNetworkError"
    assert rc.message.endswith("message: address already in use"), rc.message


def test_an_indented_message_line_still_continues_the_message() -> None:
    """An exception's message over indented lines (not frame or caret lines) keeps them."""
    log = _FIRST.replace("address already in use\n", "address already in use\n    (is another job on port 29500?)\n")
    rc = analyze_bytes(log.encode()).root_cause
    assert rc is not None and rc.message.endswith("(is another job on port 29500?)"), rc.message
