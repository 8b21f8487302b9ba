"""Entry point of the remote side: ``worker.cli call OP JSON`` or ``... agent`` (started as worker/boot.py says).

``call`` runs one operation and prints one JSON line. ``agent`` serves operations over stdin/stdout as
JSON lines (``{"id": N, "op": ..., "args": {...}}`` → ``{"id": N, "ok": true, "result": ...}``), so a
controller can ask many questions over one SSH channel without paying a login shell each time.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from worker.ops import OPERATIONS, OpError


def handle(request: dict[str, Any]) -> dict[str, Any]:
    op = OPERATIONS.get(request.get("op", ""))
    if op is None:
        return {"id": request.get("id"), "ok": False, "error": f"unknown operation {request.get('op')!r}"}
    try:
        result = op(**request.get("args", {}))
    except OpError as err:
        return {"id": request.get("id"), "ok": False, "error": str(err)}
    except OSError as err:
        return {"id": request.get("id"), "ok": False, "error": f"{err.strerror or err}: {err.filename or ''}"}
    return {"id": request.get("id"), "ok": True, "result": result}


def agent() -> int:
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except ValueError:
            reply: dict[str, Any] = {"id": None, "ok": False, "error": "malformed request"}
        else:
            reply = handle(request)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["agent"]:
        return agent()
    if len(argv) == 3 and argv[0] == "call":
        reply = handle({"id": 0, "op": argv[1], "args": json.loads(argv[2])})
        print(json.dumps(reply))
        return 0 if reply["ok"] else 1
    print("usage: worker.cli call OP JSON | agent", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
