"""Logs reshaped on their way to the user (issue 15): indentation lost (a paste rendered as text), an empty line
after every line (a web page), the empty lines ``tr '\\r' '\\n'`` leaves in records, a paste that begins with
the exception line or after a ``raise`` line. Each gives the verdict of the log as vLLM wrote it, with the
file's line numbers."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from logforms import cat_v, cr_to_newline, csv_exported, double_spaced, escapes_shown, flattened, plain

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.analyze import analyze_stream
from orchestrator.logparse.spacing import Undoubler
from orchestrator.logparse.spacing import double_spaced as looks_double_spaced
from orchestrator.logparse.tbtext import exception_like

DATA = Path(__file__).resolve().parents[2] / "data"
#: The real logs of public repositories and the held-out ones, with their expected verdicts.
SETS = ("real", "heldout", "wild")
ITEMS = [(DATA / s / item["file"], item) for s in SETS for item in json.loads((DATA / s / "expected.json").read_text())]
FORMS = {"flattened": flattened, "tr CR LF": cr_to_newline, "double-spaced": double_spaced,
         "less": lambda d: escapes_shown(d, b"ESC"), "cat -v colours": lambda d: escapes_shown(d, b"^["),
         "cat -v": cat_v, "CSV export": csv_exported}


def said(data: bytes) -> tuple[Any, ...]:
    v = analyze_bytes(data).to_json(file="x.log")
    rc = v["root_cause"] or {}
    return v["failed"], rc.get("exception"), " ".join(str(rc.get("message") or "").split())[:24]


@pytest.mark.parametrize("form", FORMS)
def test_a_reshaped_log_has_the_verdict_of_the_log(form: str) -> None:
    """Every real log, reshaped: the same verdict, root-cause exception and message (its start, blanks aside)
    as the log itself.  (``tr`` leaves an empty line inside each multi-line record: a message continued on
    the record's next lines may lose that continuation.)"""
    wrong = []
    for path, _item in ITEMS:
        data = path.read_bytes()
        want, got = said(data), said(FORMS[form](data))
        if got != want:
            wrong.append(f"{path.name}: {got} (want {want})")
    assert not wrong, "\n".join(wrong)


def test_flattened_traceback_keeps_its_frames_and_exception() -> None:
    """A raw traceback with no indentation: frame and source lines are frames, caret lines too, an
    annotated assignment (``inner: T = f()``) is a source line, and the exception line ends it."""
    log = (b"Traceback (most recent call last):\n"
           b'File "/x/core.py", line 81, in __init__\n'
           b"inner: _Encoding = _load(name)\n"
           b"^^^^^^^^^^^^^\n"
           b'File "/x/utils.py", line 12, in _load\n'
           b"raise ValueError(\n"
           b"ValueError: The model's max seq len (131072) is larger than the KV cache (45232).\n")
    a = analyze_bytes(log)
    rc = a.root_cause
    assert a.failed and rc is not None
    assert (rc.exception, rc.line_no) == ("ValueError", 1)
    assert rc.message.startswith("The model's max seq len (131072)")
    assert rc.traceback is not None and rc.traceback.count("File ") == 2


def test_flattened_python313_statement_over_several_lines_is_source() -> None:
    """Python 3.13 shows a statement over several lines (an argument per line, ``...<7 lines>...`` for those
    left out, the closing bracket, carets under each): with the indentation lost, those lines are still the
    frame's source, whether or not a line ends with a comma."""
    log = (b"Traceback (most recent call last):\n"
           b'File "/v/v1/engine/core.py", line 98, in __init__\n'
           b"self.model_executor = executor_class(\n"
           b"vllm_config,\n"
           b"^^^^^^^^^^^^\n"
           b"...<3 lines>...\n"
           b"internal_dp_balancing,\n"
           b"^^^^^^^^^^^^^^^^^^^^^^\n"
           b")\n"
           b'File "/v/v1/worker/gpu_model_runner.py", line 6228, in profile_run\n'
           b"hidden_states, last_hidden_states = self._dummy_run(\n"
           b"~~~~~~~~~~~~~~~^\n"
           b"self.max_num_tokens, is_profile=True\n"
           b"^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
           b")\n"
           b"^\n"
           b'File "/v/v1/worker/utils.py", line 254, in request_memory\n'
           b"raise ValueError(\n"
           b"...<7 lines>...\n"
           b")\n"
           b"ValueError: Free memory on device cuda:0 (9.91/11.5 GiB) on startup is less than desired GPU memory "
           b"utilization (0.92, 10.58 GiB).\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("ValueError", 1)
    assert rc.message.startswith("Free memory on device cuda:0") and "\n" not in rc.message


@pytest.mark.parametrize("line, exc", [
    ("ValueError: bad", True), ("torch.OutOfMemoryError: CUDA out of memory", True), ("KeyboardInterrupt", True),
    ("inner: _PyHarmonyEncoding = _load_harmony_encoding(name)", False), ("raise RuntimeError(f'x')", False),
    ("compilation_times: list[CompilationTimes] = self.collective_rpc(", False), ("main()", False),
])
def test_an_exception_line_is_told_from_a_source_line(line: str, exc: bool) -> None:
    assert exception_like(line) is exc


def test_a_paste_that_begins_with_the_exception_line() -> None:
    """The paste starts at a worker's exception line (its traceback above was not copied); another worker's
    traceback after it is cut before its own exception line: the first names the cause."""
    log = (b"(VllmWorkerProcess pid=7) ERROR 12-29 07:45:20 multiproc_worker_utils.py:236] RuntimeError: Cannot "
           b"re-initialize CUDA in forked subprocess.\n"
           b"(VllmWorkerProcess pid=8) ERROR 12-29 07:45:20 multiproc_worker_utils.py:236] Traceback (most recent "
           b"call last):\n"
           b'(VllmWorkerProcess pid=8) ERROR 12-29 07:45:20 multiproc_worker_utils.py:236]   File "/x/worker.py", '
           b"line 138, in init_device\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.process, rc.line_no) == ("RuntimeError", "VllmWorkerProcess", 1)
    assert rc.message.startswith("Cannot re-initialize CUDA")


def test_a_flattened_paste_cut_above_the_raise_line() -> None:
    """Frames at column 0 and no header (a paste rendered as text, cut at the top): the exception line after
    the ``raise`` line is the cause, not the ``raise`` line that mentions the error."""
    log = (b'File "/sgl/pynccl.py", line 110, in __init__\n'
           b"self.comm = self.nccl.ncclCommInitRank(\n"
           b'File "/sgl/pynccl_wrapper.py", line 350, in NCCL_CHECK\n'
           b'raise RuntimeError(f"NCCL error: {error_str}")\n'
           b"RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("RuntimeError", 5)
    assert rc.message.startswith("NCCL error: unhandled system error")


def test_a_flattened_prefixed_paste_names_its_exception_after_many_error_lines() -> None:
    """h01's worker traceback as a paste: cut above its first frame, indentation lost after vLLM's prefix
    (every frame and source line an ERROR record, more of them than are kept as pending error lines; the
    line above the exception is a source line, not a ``raise``), and cut again after the next process's
    ``Traceback`` header: the exception line below the frames is the cause, not the header that names
    nothing."""
    lines = (DATA / "heldout" / "h01_v0_vllmworkerprocess_oom.log").read_bytes().splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if b"multiproc_worker_utils.py:233]   File " in ln)
    last = next(i for i, ln in enumerate(lines) if b"] torch.OutOfMemoryError: " in ln)
    assert last - first > 8 and b"raise" not in lines[last - 1]
    log = flattened(b"".join(lines[first:last + 1])) + b"Process SpawnProcess-1:\nTraceback (most recent call last):\n"
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("torch.OutOfMemoryError", last - first + 1)
    assert rc.message.startswith("CUDA out of memory")


def test_the_first_error_line_naming_an_exception_is_kept_past_the_pending_ones() -> None:
    """The same shape with an exception no signature knows (a weight missing from a quantised checkpoint):
    it is the ninth error line, past those kept as pending, and still the cause."""
    frame = (b'ERROR 12-05 20:24:46 engine.py:366] File "/v/model_executor/models/utils.py", line 175, in _load\n'
             b"ERROR 12-05 20:24:46 engine.py:366] module_load_weights(weights)\n")
    log = (frame * 4 + b"ERROR 12-05 20:24:46 engine.py:366] param = params_dict[name]\n"
           b"ERROR 12-05 20:24:46 engine.py:366] KeyError: 'layers.0.mlp.down_proj.weight_scale'\n"
           b"Process SpawnProcess-1:\nTraceback (most recent call last):\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("KeyError", 10)
    assert rc.message == "'layers.0.mlp.down_proj.weight_scale'"


def test_double_spaced_log_keeps_the_files_line_numbers() -> None:
    """r27 with an empty line after every line: the cause is found at the file's line, and the note says
    how the log was read."""
    data = (DATA / "real" / "r27_flashinfer_import_typeerror_py311.log").read_bytes()
    spaced = double_spaced(data)
    notes: list[str] = []
    got, want = analyze_stream(io.BytesIO(spaced), notes=notes), analyze_bytes(plain(data))
    assert got.root_cause is not None and want.root_cause is not None
    assert got.root_cause.line_no == 2 * want.root_cause.line_no - 1
    assert spaced.split(b"\n")[got.root_cause.line_no - 1] == plain(data).split(b"\n")[want.root_cause.line_no - 1]
    assert (got.lines, got.bytes) == (spaced.count(b"\n"), len(spaced))
    assert notes and notes[0].startswith("double-spaced")


def test_a_three_line_fragment_double_spaced_is_read_as_its_lines() -> None:
    """A paste of a traceback's last three lines with an empty line after each (wild150 dx01, double-spaced):
    the exception is still the last frame's."""
    tail = ('  File "/srv/lm_eval/models/vllm_causallms.py", line 108, in __init__\n'
            "    self.model = LLM(**self.model_args)\n"
            "NameError: name 'LLM' is not defined. Did you mean: 'VLLM'?\n")
    spaced = tail.replace("\n", "\n\n").encode()
    assert looks_double_spaced(spaced) and not looks_double_spaced(tail.encode())
    rc, want = analyze_bytes(spaced).root_cause, analyze_bytes(tail.encode()).root_cause
    assert rc is not None and want is not None
    assert (rc.exception, rc.message, rc.line_no) == (want.exception, want.message, 2 * want.line_no - 1)


def test_a_double_spaced_log_with_empty_lines_of_its_own_keeps_them_single() -> None:
    """A chained traceback has empty lines of its own (around ``During handling ...``); double-spaced, each became
    three: read as one, the chain holds and its last exception is the cause (wild123 rs01, double-spaced)."""
    chained = (b"Traceback (most recent call last):\n"
               b'  File "/x/metadata.py", line 563, in from_name\n'
               b"    return next(cls.discover(name=name))\n"
               b"StopIteration\n\n"
               b"During handling of the above exception, another exception occurred:\n\n"
               b"Traceback (most recent call last):\n"
               b'  File "/x/metadata.py", line 565, in from_name\n'
               b"    raise PackageNotFoundError(name)\n"
               b"importlib.metadata.PackageNotFoundError: No package metadata was found for flashinfer_python\n")
    spaced = double_spaced(chained)
    assert looks_double_spaced(spaced)
    rc, want = analyze_bytes(spaced).root_cause, analyze_bytes(chained).root_cause
    assert rc is not None and want is not None and want.exception == "importlib.metadata.PackageNotFoundError"
    assert (rc.exception, rc.message, rc.line_no) == (want.exception, want.message, 2 * want.line_no - 1)


def test_logs_with_some_empty_lines_are_not_double_spaced() -> None:
    """No stored log is taken for a double-spaced one (they have empty lines, not one after every line)."""
    for path in sorted(p for s in (*SETS, "logs", "gpu") for p in (DATA / s).glob("*.log")):
        data = path.read_bytes()
        assert not looks_double_spaced(data[:1 << 20]) and not looks_double_spaced(plain(data)[:1 << 20]), path.name


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_undoubled_line_numbers_are_the_files(chunk: int) -> None:
    """Whatever the mix of double-spaced stretches, plain ones and kept empty lines, and however the bytes
    arrive: each line read maps back to its line in the file."""
    text = (b"".join(b"a%d\n\n" % i for i in range(6)) + b"plain1\nbar 1%\rbar 2%\nplain3\n\n\n\nb1\n\nb2\n\n"
            + b"d1\n\n\n\nd2\n\n\n\n\n\nd3\n\n"  # the log's own empty lines, doubled
            + b"".join(b"c%d\n" % i for i in range(5)) + b"end")
    u = Undoubler()
    out = b"".join(u.feed(text[i:i + chunk]) for i in range(0, len(text), chunk)) + u.finish()
    file_lines = text.split(b"\n")
    for n, line in enumerate(out.split(b"\n"), start=1):
        if line:
            assert file_lines[u.file_line(n) - 1] == line, (n, line)
    assert len(out.split(b"\n")) + u.dropped == len(file_lines)


_SHOWN = (b"ESC[1;36m(Worker_TP1 pid=168)ESC[0;0m INFO 08-12 14:37:40 [gpu_worker.py:100] Loading weights\n"
          b"ESC[1;36m(Worker_TP1 pid=168)ESC[0;0m ERROR 08-12 14:37:42 [multiproc_executor.py:559] Traceback (most recent call last):\n"
          b'ESC[1;36m(Worker_TP1 pid=168)ESC[0;0m ERROR 08-12 14:37:42 [multiproc_executor.py:559]   File "/v/worker.py", line 9, in load\n'
          b"ESC[1;36m(Worker_TP1 pid=168)ESC[0;0m ERROR 08-12 14:37:42 [multiproc_executor.py:559]     raise KeyError(name)\n"
          b"ESC[1;36m(Worker_TP1 pid=168)ESC[0;0m ERROR 08-12 14:37:42 [multiproc_executor.py:559] KeyError: 'lm_head.weight'\n"
          b"ESC[1;36m(EngineCore pid=114)ESC[0;0m ERROR 08-12 14:37:44 [core.py:718] EngineCore failed to start.\n"
          b"RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n")


@pytest.mark.parametrize("spelling", [b"ESC", b"^[", b"\\x1b", b"\\033", b"\\e", b"\\u001b", b"#033"])
def test_colour_codes_written_out_are_read_as_codes(spelling: bytes) -> None:
    """``less`` writes ``ESC[1;36m``, ``cat -v`` ``^[[1;36m``, a ``repr`` ``\\x1b[``: the worker's prefix is read
    as one, so its traceback is the root cause, with the file's line numbers and size, and the note says so."""
    log = _SHOWN.replace(b"ESC", spelling)
    notes: list[str] = []
    a = analyze_stream(io.BytesIO(log), 64, notes)  # small chunks: a code cut between two of them
    rc = a.root_cause
    assert rc is not None and rc.exception == "KeyError" and rc.process == "Worker_TP1" and rc.line_no == 2
    assert a.lines == 7 and a.bytes == len(log)
    assert any(n.startswith(f"colour codes ({spelling.decode()}[1;36m) written out as text") for n in notes), notes


def test_a_log_that_only_mentions_an_escape_is_read_as_it_is() -> None:
    """One ``\\033[`` in a message (a shell script's echo) or a log whose codes are real escape bytes is not
    taken for codes written out."""
    from orchestrator.logparse.escapes import shown_escapes
    assert shown_escapes(b"INFO run.sh: printf '\\033[1;32mok\\033[0m' when done\n") is None
    assert shown_escapes(b"INFO run.sh: printf '\\033[1;32mok' when done\n") is None
    assert shown_escapes(b"\x1b[1;36m(Worker pid=1)\x1b[0;0m INFO ESC[1;36m ESC[0m\n") is None
    assert shown_escapes(b"ERROR ESC key pressed [1;36m twice\n") is None
