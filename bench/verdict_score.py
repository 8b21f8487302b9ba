"""Figure: the share of right verdicts of ``eorch log analyze`` on a directory of real logs (issue 15).

    .venv/bin/python bench/verdict_score.py tests/data/heldout [--json] [--verbose] [--transforms]

The directory holds ``*.log`` files and one ``expected.json`` (a list of objects, one per file) written
before the parser was run on them.  Both key styles are read:

* ``failed``, ``exception``, ``message_contains`` (a list: any one may match), ``process``;
* ``failed``, ``root_exception``, ``root_message_contains`` (a string), as in the shared real-logs set.

A verdict is right when ``failed`` agrees and, for a failed log, the root cause's exception (when expected)
is the expected one (written with or without its module: ``torch.OutOfMemoryError`` is ``OutOfMemoryError``) and its message or exception line holds one of the expected texts (and the process
matches, when expected).  Every log is scored twice: as stored, and with its line endings normalised
(``\\r\\n`` and lone ``\\r`` -> ``\\n``, as a copy-paste, ``kubectl logs`` or ``dos2unix`` leave it).
With ``--transforms``, also as seven log collectors write it (normalised, and each line prefixed: kubectl's and
docker compose's timestamps and columns, journalctl's two formats, ``srun --label``), as a terminal's copy
hard-wraps it (at 120 columns), with every line ending in ``\\r\\n`` (``unix2dos``, a Windows editor), with its
indentation lost (a paste rendered as text) and with an empty line after every line (a web page's copy).
With ``--pasted``, also with what a paste puts around it (``tests/logforms.PASTES``): quoted by a reply, numbered
by ``cat -n`` and ``grep -n``, behind pm2's column, in Markdown code fences.
A UTF-16 log (a Windows PowerShell redirect) is transformed as the text it holds, in UTF-8: a collector or a
terminal passes on characters, not the file's bytes.
"""

from __future__ import annotations

import argparse
import codecs
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from logforms import COLLECTORS, PASTES, double_spaced, flattened, hard_wrapped, plain, prefixed

from orchestrator.logparse import analyze_bytes


def transforms(data: bytes) -> list[tuple[str, bytes]]:
    """The log as it reaches a user by other ways than the file (``--transforms``)."""
    forms = [(name, prefixed(data, prefix)) for name, prefix in COLLECTORS.items()]
    return [*forms, ("hard-wrapped at 120", hard_wrapped(data, 120)),
            ("unix2dos", plain(data).replace(b"\n", b"\r\n")),
            ("flattened (indentation lost)", flattened(data)), ("double-spaced", double_spaced(data))]


def _wanted(item: dict[str, Any]) -> tuple[bool, str | None, list[str], str | None]:
    failed = bool(item["failed"])
    exc = item.get("exception", item.get("root_exception"))
    texts = item.get("message_contains", item.get("root_message_contains"))
    if isinstance(texts, str):
        texts = [texts]
    return failed, exc, list(texts or []), item.get("process")


def same_exception(got: str | None, want: str) -> bool:
    """The same exception class, as written with or without its module (``torch.OutOfMemoryError`` is the
    ``OutOfMemoryError`` an expected verdict names, and C++'s ``c10::AcceleratorError`` torch's
    ``AcceleratorError``); two different modules' names are not."""
    if got is None or got == want:
        return got == want
    got, want = got.replace("::", "."), want.replace("::", ".")
    return ("." not in got or "." not in want) and got.rsplit(".", 1)[-1] == want.rsplit(".", 1)[-1]


def judge(item: dict[str, Any], verdict: dict[str, Any], squeezed: bool = False) -> str | None:
    """None when the verdict is right, else what is wrong (one line).  ``squeezed``: the log's runs of blanks
    were made one (``flattened``), so the expected texts' are too."""
    failed, exc, texts, process = _wanted(item)
    if squeezed:
        texts = [re.sub(r"[ \t]+", " ", t).strip() for t in texts]
    rc = verdict.get("root_cause") or {}
    if verdict["failed"] != failed:
        got = f"{rc.get('exception')}: {str(rc.get('message'))[:80]}" if rc else "no root cause"
        return f"failed={verdict['failed']} (want {failed}); {got}"
    if not failed:
        return None
    if not rc:
        return "no root cause"
    if exc is not None and not same_exception(rc.get("exception"), exc):
        return f"exception {rc.get('exception')!r} (want {exc!r}): {str(rc.get('message'))[:80]}"
    said = f"{rc.get('exception') or ''}: {rc.get('message') or ''}"
    if texts and not any(t in said for t in texts):
        return f"message {str(rc.get('message'))[:100]!r} lacks {texts[0]!r}"
    if process is not None and rc.get("process") != process:
        return f"process {rc.get('process')!r} (want {process!r})"
    return None


def _as_text(data: bytes) -> bytes:
    """The log's text in UTF-8: a UTF-16 file (with its byte-order mark) transcoded, any other as it is."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16").encode("utf-8")
    return data


def score(directory: Path, more: bool = False, pasted: bool = False) -> dict[str, Any]:
    items = json.loads((directory / "expected.json").read_text())
    rows = []
    for item in items:
        data = (directory / item["file"]).read_bytes()
        forms = [("as stored", data), ("normalised", plain(data))]
        if more:
            forms += transforms(_as_text(data))
        if pasted:
            forms += [(name, form(_as_text(data))) for name, form in PASTES.items()]
        for form, payload in forms:
            verdict = analyze_bytes(payload).to_json(file=item["file"])
            rows.append({"file": item["file"], "form": form, "wrong": judge(item, verdict, form.startswith("flattened"))})
    right = sum(1 for r in rows if r["wrong"] is None)
    return {"directory": directory.name, "right": right, "total": len(rows),
            "share": round(right / len(rows), 3) if rows else None, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="list every verdict, right ones too")
    ap.add_argument("--transforms", action="store_true",
                    help="also score each log as 7 log collectors write it, hard-wrapped, unix2dos'd, flattened and double-spaced")
    ap.add_argument("--pasted", action="store_true",
                    help="also score each log quoted (\"> \"), numbered by cat -n and grep -n, behind pm2's column and in "
                         "Markdown fences")
    args = ap.parse_args()
    if not (args.directory / "expected.json").is_file():
        ap.exit(2, f"verdict_score: {args.directory} holds no expected.json (the verdicts written before the parser "
                   "ran on its logs): give a directory of real logs that has one\n")
    result = score(args.directory, args.transforms, args.pasted)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['directory']}: {result['right']}/{result['total']} right verdicts ({result['share']:.0%})")
    for row in result["rows"]:
        if row["wrong"] is not None or args.verbose:
            mark = "ok " if row["wrong"] is None else "BAD"
            print(f"  {mark} {row['file']} [{row['form']}] {row['wrong'] or ''}")


if __name__ == "__main__":
    main()
