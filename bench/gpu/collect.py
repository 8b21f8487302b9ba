"""Turn what the device calls brought back into the repo's results and fixtures (run here, after the lease).

    python3 bench/gpu/collect.py DIR [DIR …] [--gpu h100]    # the card the calls ran on (default h200)

Each DIR is a call's ``files_at`` folder (``s1.json``, ``s3a.json``, ``s3.json``, ``s4.json``, ``s5.json``, ``p6.json``,
``*-runs.tar.gz``).
Writes ``bench/results/gpu_scenarios_h200.json`` (every verdict, without the logs), ``bench/results/
gpu_p6_h200.json`` (if P6 ran), and per run ``tests/data/gpu/vllm-0.26.0-h200_<scenario>.log`` (the run log
through eorch: recipe lines + vLLM's output, device paths replaced by ``<work>`` / ``<venv>``) with
``tests/data/gpu/expected.json``: per fixture the run's end (status, exit code), what vLLM printed as the cause
(``cause``: the exception and the message that says what is wrong) and what ``eorch show`` said
(``eorch_root_cause``), so parser tests can pin the first to the second.
"""

from __future__ import annotations

import json
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "data" / "gpu"
RESULTS = REPO / "bench" / "results"
_EXC = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): (.*)$")


def sanitize(text: str, prefixes: dict[str, str]) -> str:
    for path, token in sorted(prefixes.items(), key=lambda kv: -len(kv[0])):
        if path:
            text = text.replace(path, token)
    return text


def cause(log: str, needle: str | None) -> dict[str, Any] | None:
    """The line carrying vLLM's message (an exception line of vLLM's before a recipe or client line) and the
    exception it belongs to (the nearest ``Type: …`` line at or above it; none for an argparse error)."""
    if not needle:
        return None
    lines = log.splitlines()
    hits = [i for i, line in enumerate(lines) if needle in line]
    if not hits:
        return {"exception": None, "line": None, "message_contains": needle, "note": "not in the log"}
    i = min(hits, key=lambda j: (lines[j].startswith(("[speculators]", "[eorch]")), not _EXC.search(lines[j]), j))
    exc = None
    for back in range(i, max(-1, i - 8), -1):
        m = _EXC.search(lines[back])
        if m:
            exc = m.group(1)
            break
    return {"exception": exc, "line": lines[i].split("] ", 1)[-1].strip()[:400], "message_contains": needle}


def main(argv: list[str] | None = None) -> int:
    args = list(argv if argv is not None else sys.argv[1:])
    gpu = "h200"
    if "--gpu" in args:  # the card the device tool lent (its reply's ``device``): h200 or h100
        at = args.index("--gpu")
        gpu, args = args[at + 1], args[:at] + args[at + 2:]
    dirs = [Path(d) for d in args]
    groups: dict[str, Any] = {}
    p6 = None
    for d in dirs:
        for f in sorted(d.glob("s*.json")):
            if f.stem in ("s1", "s3a", "s3", "s4", "s5", "s6", "s7"):
                groups[f.stem] = json.loads(f.read_text())
        if (d / "p6.json").exists():
            p6 = json.loads((d / "p6.json").read_text())
    FIXTURES.mkdir(parents=True, exist_ok=True)
    expected: dict[str, Any] = {}
    exp_path = FIXTURES / "expected.json"
    if exp_path.exists():
        expected = json.loads(exp_path.read_text())
    for d in dirs:
        for tgz in sorted(d.glob("*-runs.tar.gz")):
            group = tgz.name.split("-runs")[0]
            info = groups.get(group, {})
            prefixes = {info.get("work", ""): "<work>", info.get("python_prefix", ""): "<venv>",
                        info.get("python_base_prefix", ""): "<python>"}
            runs = {r["scenario"]: r for r in info.get("runs", [])}
            with tarfile.open(tgz) as tar:
                for member in tar.getmembers():
                    parts = Path(member.name).parts
                    if len(parts) != 3 or parts[2] != "log" or not member.isfile():
                        continue
                    name = parts[1]
                    fobj = tar.extractfile(member)
                    assert fobj is not None
                    raw = fobj.read()  # bytes as written: \r of progress bars, ANSI codes and all
                    for path, token in sorted(prefixes.items(), key=lambda kv: -len(kv[0])):
                        if path:
                            raw = raw.replace(path.encode(), token.encode())
                    log = raw.decode("utf-8", "replace")
                    fixture = f"vllm-0.26.0-{gpu}_{name}.log"
                    (FIXTURES / fixture).write_bytes(raw)
                    r = runs.get(name, {})
                    expected[fixture] = {
                        "scenario": name, "status": r.get("status"), "exit_code": r.get("exit_code"),
                        "cause": cause(log, r.get("vllm_said")),
                        "eorch_root_cause": r.get("root_cause"), "verdict": r.get("verdict"),
                    }
    exp_path.write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n")
    RESULTS.mkdir(parents=True, exist_ok=True)
    slim = {g: {**v, "runs": [{k: x for k, x in r.items() if k != "log_tail"} for r in v.get("runs", [])]}
            for g, v in sorted(groups.items())}
    for g in slim.values():
        prefixes = {g.get("work", ""): "<work>", g.get("python_prefix", ""): "<venv>"}
        for key in ("work", "python_prefix", "python_base_prefix"):
            g.pop(key, None)
        g["runs"] = json.loads(sanitize(json.dumps(g["runs"]), prefixes))
    results = RESULTS / "gpu_scenarios_h200.json"
    kept = json.loads(results.read_text()) if results.exists() else {}  # groups of earlier leases stay
    results.write_text(json.dumps({**kept, **slim}, indent=2) + "\n")
    if p6 is not None:
        (RESULTS / "gpu_p6_h200.json").write_text(json.dumps(p6, indent=2) + "\n")
    print(f"{len(expected)} fixtures in {FIXTURES.relative_to(REPO)}; groups {sorted(groups)}; p6 {p6 is not None}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
