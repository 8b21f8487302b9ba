"""Entry point of the remote side: ``worker.cli call OP JSON`` or ``... agent`` (started as worker/boot.py says).

``call`` runs one operation and prints one reply line. ``agent`` serves operations over stdin/stdout as JSON
lines (worker/protocol.py), so a controller can ask many questions over one SSH channel without paying a
login shell each time. Whatever an operation raises becomes an error reply: the agent keeps serving.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import traceback
from typing import Any

from worker.ops import OPERATIONS, OpError
from worker.protocol import CRASHED, ErrorReply, OkReply, ProtocolError, Reply, Request, encode_reply


def _where(err: BaseException) -> str:
    """The innermost frame of err's traceback: ``ops.py:160 in status``."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f"{os.path.basename(last.filename)}:{last.lineno} in {last.name}"


def _crashed(request_id: Any, err: Exception) -> ErrorReply:
    text = str(err).strip().splitlines()
    message = f"{type(err).__name__}: {text[0]}" if text else type(err).__name__
    return ErrorReply(request_id, f"eorch's worker failed: {message}", CRASHED, _where(err))


def handle(raw: object) -> Reply:
    """The reply to one decoded JSON request, whatever it holds."""
    try:
        request = Request.from_json(raw)
    except ProtocolError as err:
        request_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), int) else None
        return ErrorReply(request_id, f"malformed request: {err}")
    op = OPERATIONS.get(request.op)
    if op is None:
        return ErrorReply(request.id, f"unknown operation {request.op!r}")
    try:
        inspect.signature(op).bind(**request.args)
    except TypeError as err:
        return ErrorReply(request.id, f"bad arguments for {request.op!r}: {err}")
    try:
        result: dict[str, Any] = op(**request.args)
    except OpError as err:
        return ErrorReply(request.id, str(err))
    except ProtocolError as err:
        return ErrorReply(request.id, f"bad arguments for {request.op!r}: {err}")
    except OSError as err:
        return ErrorReply(request.id, f"{err.strerror or err}: {err.filename or ''}")
    except Exception as err:  # noqa: BLE001 - a bug or a corrupt file on the host: say so, keep serving
        return _crashed(request.id, err)
    return OkReply(request.id, result)


def _reply_line(reply: Reply) -> str:
    try:
        return encode_reply(reply)
    except (TypeError, ValueError) as err:  # a result that is not JSON: the worker's bug, told as such
        return encode_reply(_crashed(reply.id, err))


def agent() -> int:
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            reply: Reply = ErrorReply(None, "malformed request: not JSON")
        else:
            reply = handle(raw)
        sys.stdout.write(_reply_line(reply) + "\n")
        sys.stdout.flush()
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["agent"]:
        return agent()
    if len(argv) == 3 and argv[0] == "call":
        try:
            args = json.loads(argv[2])
        except ValueError:
            reply: Reply = ErrorReply(0, "malformed request: the arguments are not JSON")
        else:
            reply = handle({"id": 0, "op": argv[1], "args": args})
        print(_reply_line(reply))
        return 0 if isinstance(reply, OkReply) else 1
    print("usage: worker.cli call OP JSON | agent", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
