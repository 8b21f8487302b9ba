"""Process prefixes of both vLLM eras, and unprefixed lines."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.logparse.lines import decode
from orchestrator.logparse.prefixes import MAIN, multiprocessing_header, parse_line, prefix_only, quick_key

from .conftest import parse_all


@pytest.mark.parametrize(
    ("text", "process", "pid", "level", "message"),
    [
        ("(Worker_TP3 pid=255661) INFO 02-21 21:43:13 [multiproc_executor.py:732] Parent process exited",
         "Worker_TP3", 255661, "INFO", "Parent process exited"),
        ("(EngineCore pid=7) INFO 11-29 10:02:27 [core.py:1512] msg", "EngineCore", 7, "INFO", "msg"),
        ("(APIServer pid=1) WARNING 11-29 10:02:27 [x.py:1] w", "APIServer", 1, "WARNING", "w"),
        ("(Worker pid=3) ERROR 11-29 10:02:27 [x.py:1] e", "Worker", 3, "ERROR", "e"),
        ("(EngineCore_DP0 pid=4) DEBUG 11-29 10:02:27 [x.py:1] d", "EngineCore_DP0", 4, "DEBUG", "d"),
        ("(VllmWorker-0 pid=5) WARNING 11-29 10:07:59 [vllm.py:725] early", "VllmWorker-0", 5, "WARNING", "early"),
        ("(Worker_TP0 pid=9) Loading safetensors checkpoint shards: 0%", "Worker_TP0", 9, None,
         "Loading safetensors checkpoint shards: 0%"),
        ("(RayWorkerProc pid=8, ip=10.0.0.2) (Worker_DP0_TP0_EP0 pid=9) INFO 11-29 10:02:27 [a.py:1] ray",
         "Worker_DP0_TP0_EP0", 9, "INFO", "ray"),
        ("INFO:     Application startup complete.", MAIN, None, None, "INFO:     Application startup complete."),
        ("Traceback (most recent call last):", MAIN, None, None, "Traceback (most recent call last):"),
        ("[rank0]:   File \"/x/pynccl.py\", line 256, in NCCL_CHECK", "rank0", None, None,
         "  File \"/x/pynccl.py\", line 256, in NCCL_CHECK"),
        ("(Worker_TP1 pid=3) [rank1]: RuntimeError: NCCL error", "Worker_TP1", 3, None, "RuntimeError: NCCL error"),
        (("(RayWorkerWrapper pid=880) ERROR 04-16 01:01:44 [worker_base.py:620] Traceback (most recent call last): "
          "[repeated 6x across cluster]"), "RayWorkerWrapper", 880, "ERROR", "Traceback (most recent call last):"),
        ("WARNING:sgl_jax.srt.entrypoints.engine:Child process unexpectedly failed with exitcode=9. pid=9", MAIN, None,
         "WARNING", "Child process unexpectedly failed with exitcode=9. pid=9"),  # logging.basicConfig()'s layout
        ("....[rank0]:[E623 13:46:28.176383770 compiler_depend.ts:429] ReshapeAndCacheOperation setup failed!", "rank0",
         None, "ERROR", "[E623 13:46:28.176383770 compiler_depend.ts:429] ReshapeAndCacheOperation setup failed!"),
        ("ERROR: Cannot install vllm because these package versions have conflicting dependencies.", MAIN, None, None,
         "ERROR: Cannot install vllm because these package versions have conflicting dependencies."),  # pip's
        # Python logging's layouts led by %(asctime)s, as scripts around vLLM configure them, and loguru's.
        ("2025-06-27 18:12:41,502 - gen_data - ERROR - ValueError: no prompts", MAIN, None, "ERROR",
         "ValueError: no prompts"),
        ("2025-06-27 18:12:41.502 | WARNING  | __main__:main:42 - retrying", MAIN, None, "WARNING", "retrying"),
        ("2025-06-27 18:12:41,502 [ERROR] server: engine died", MAIN, None, "ERROR", "engine died"),
        ("2025-06-27 18:12:41 FATAL out of memory", MAIN, None, "CRITICAL", "out of memory"),
        ("[2025-03-05 14:28:45,820] [ERROR] [MainThread] [vllm.worker.worker_base] >>>   File \"/x.py\", line 1",
         MAIN, None, "ERROR", '  File "/x.py", line 1'),  # a bracketed layout with a marker (wild125)
        ("2025-06-27 18:12:41,502 ValueError: a stamp, then no level", MAIN, None, None,
         "2025-06-27 18:12:41,502 ValueError: a stamp, then no level"),
    ],
)
def test_parse_line(text: str, process: str, pid: int | None, level: str | None, message: str) -> None:
    """Each style splits into process, pid, level and message."""
    line = parse_line(text)
    assert (line.process, line.pid, line.level, line.message) == (process, pid, level, message)


def test_prefix_only_and_multiprocessing_header() -> None:
    """0.16 writes a bare prefix before tqdm's \\r; multiprocessing names a child before its traceback."""
    assert prefix_only("(Worker_TP0 pid=256850) ") == ("Worker_TP0", 256850)
    assert prefix_only("(Worker_TP0 pid=256850) x") is None
    assert multiprocessing_header("Process EngineCore:") == "EngineCore"


def test_tqdm_frame_after_bare_prefix_belongs_to_that_worker() -> None:
    """`(Worker_TP0 pid=1) \\rLoading ...` : the frame is Worker_TP0's, also when split at the \\r."""
    data = (b"(Worker_TP0 pid=1) \rLoading safetensors checkpoint shards:  84% Completed | 54/64 "
            b"[15:18<02:50, 17.00s/it]\n(Worker_TP0 pid=1) \rTraceback (most recent call last):\n")
    for cuts in ([], [20], [19, 1]):
        events, _ = parse_all(data, cuts)
        shards = [e for e in events if e.kind == "shards_progressed"]
        assert shards and shards[0].to_dict()["done"] == 54


_PARTS = [b"(Worker_TP3 pid=12) ", b"(RayWorkerProc pid=8, ip=10.0.0.2) ", b"(EngineCore pid=7)", b"(x pid=)",
          b"INFO 11-29 10:02:27 [core.py:1512] ", b"\x1b[36m", b"\x00", b"\xff", b"(", b")", b" pid=3", b"text",
          b"[rank3]: ", b"[rank", b"0: "]


@given(st.lists(st.sampled_from(_PARTS), max_size=6).map(b"".join))
def test_quick_key_agrees_with_the_full_parse(raw: bytes) -> None:
    """The undecoded fast path names the same writer as the full parse, or declines."""
    key = quick_key(raw)
    assert key is None or key == parse_line(decode(raw)).key


@pytest.mark.parametrize(("line", "message"), [
    ("[2025-07-11T20:13:34Z]", ""),  # Buildkite's stamp alone: an empty line
    ("2026-03-11T17:57:09.855212259Z", ""),
    ('2026-03-11T17:57:09Z {"t": "2026-09-24T11:55:42Z", "msg": "train finished", "rc": 1}',
     '{"t": "2026-09-24T11:55:42Z", "msg": "train finished", "rc": 1}'),  # a JSON line, not Loki's labels
    ('2026-03-11T17:57:09Z {container="vllm"} INFO ready', "INFO ready"),
])
def test_a_stamp_alone_is_an_empty_line_and_a_json_line_after_one_is_kept(line: str, message: str) -> None:
    assert parse_line(line).message == message


def test_ms_swifts_bracketed_records_are_read_with_their_level() -> None:
    p = parse_line("[ERROR:swift] Method execution failed: async_infer")
    assert (p.level, p.message) == ("ERROR", "Method execution failed: async_infer")
    assert parse_line("[rank0]: Traceback (most recent call last):").level is None
