"""A log pasted from a terminal that hard-wrapped its long lines: recognised, joined again, and read with the
verdict of the log itself, line numbers the file's; no log that was not wrapped is ever taken for one."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from logforms import hard_wrapped, plain

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.analyze import analyze_stream
from orchestrator.logparse.unwrap import wrap_width

DATA = Path(__file__).resolve().parents[2] / "data"
#: Logs that were hard-wrapped on their way to us (a paste from a terminal), at the width found in them.
WRAPPED = {"g05_issue_vllm_xpu_kv_cache_too_small_max_seq_len.log": 119, "k803_cml_ray_two_gpu_pods_tp2_serving_ok.log": 147,
           "as07_vllm_ascend_gather_v3_aivec_507035.log": 187,  # (an issue paste, transcribed as the index wrapped it)
           # issue pastes the reporters hard-wrapped (wild97)
           "fo04_vllm_ray_2node_mi300a_cupy_missing.log": 130, "fo09_vllm_ray_lws_eks_pp_hang.log": 159,
           # a UCX backtrace pasted from a terminal: rows padded to 409 columns, long C++ frames wrapped (wild107)
           "nc02_sglang_nccl_ucx_caught_signal11_multinode.log": 408,
           "ch07_vllm_llama4_maverick_tp8_worker_failed_echo.log": 152,  # an issue paste wrapped at 152 (wild109)
           "tr06_vllm_bnb_llama3_clean_startup.log": 277,  # (wild101: the engine args record, wrapped by its reporter)
           "ra10_distserve_v100_no_kernel_image_engine_stuck_ctrl_c.log": 166,  # an issue paste at 166 (wild118)
           "vg03_gemma3_kv_quant_local_attn_masks_keyerror.log": 132,  # a terminal's rows, padded to 132 (wild134)
           "vd13_vllm6829_quoted_gunicorn.log": 160, "vd18_intelarc4_kv_hardwrapped.log": 119,  # (wild168)
           # a startup log committed as a terminal showed it, and a Slurm output of a wrapped vLLM 0.5 (wild170)
           "vf01_dennisleebench_tp2_startup_hardwrap.log": 147, "vf19_vllm9738_slurm_working_run.log": 162,
           "wz06_vllm1160_raylet_workers_killed_memory_pressure_oom.log": 116,  # an issue paste (wild185)
           # a worker's frames a terminal cut alike, one prefix and one long path (wild204)
           "xs02_vllm29360_qwen3coder480b_8xh20_deepgemm_warmup_wrapped_traceback_cut.log": 136,
           # an XPU engine's frames cut alike at 190, a stats record's row among them (wild194)
           "xh08_llmscaler235_xpu_qwen3_30b_a3b_enginecore_dp0_fatal_error_wrapped_cut.log": 190,
           # a terminal's copies: padded to 186 columns (wild221), an engine-args record wrapped at 159 (wild223)
           "yk02_vlmevalkit1031_use_vllm_4090_oom_run_error_cut.log": 186,
           "ym01_club3090_102_rtx5090_laptop_wsl2_engine_config_hardwrapped_startup_cut.log": 159,
           # a paste that broke its frames' paths over rows (wild245), a trainer's metrics cut into rows (wild246)
           "zi09_agents57_uitars_vllm_v0_preprocessing_prompt_inputs_wrapped_paths_cut.log": 111,
           "zj08_trl5312_grpo_vllm_sleep_mode_training_completes_metrics_cut.log": 369,
           "zq09_vllm27073_docker_ts_serving_chat_request_tokenize_error_cut.log": 159,  # (wild253)
           "zw02_instructlab2258_ilab_temporary_vllm_attempt_1_of_5_failed_to_start_cut.log": 232}  # (wild259)
LOGS = [p for p in sorted(DATA.glob("*/*.log")) if p.name not in WRAPPED]
#: Logs with a stretch that was cut or wrapped at a width on its way to us (the whole log is not): a short
#: stretch of them is rightly taken for a wrap.
IN_PART = {"ar09_cpu_offline_qwen3_pycon_clean.log",  # its first lines wrapped at 305 (a docstring's copy)
           "hf08_qwen25_14b_fp8_7min_hf_download_then_no_kv_memory.log",  # two lines cut at 269 (a Markdown copy)
           "tr03_sglang_qwen3_32b_bus_error_wrapped.log",  # its command line wrapped at the prompt (wild101)
           # a Ray worker's "Extension modules:" line wrapped at 205 (wild107), an engine-args record at 126 (wild108)
           "nc04_vllm_rocm_ray_sigabrt_received_device_assert.log",
           "en01_unsloth_vllm_qwen25vl_flash_attn_undefined_symbol.log",
           "en08_art_2048_unsloth_vllm_v0_train_steps.log",  # a trajectory's JSON wrapped near 125 (wild108)
           "gp02_vllm_dsr1_ray_pp_cuda_unspecified_launch_failure.log"}  # an issue paste wrapped at 173 (wild121)
REAL = sorted((DATA / "real").glob("*.log")) + sorted((DATA / "heldout").glob("*.log"))


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_log_that_was_not_wrapped_is_left_alone(path: Path) -> None:
    data = path.read_bytes()
    assert wrap_width(data) is None and wrap_width(plain(data)) is None


@pytest.mark.parametrize("name", WRAPPED)
def test_a_log_collected_hard_wrapped_is_seen_as_wrapped(name: str) -> None:
    found = wrap_width(next(DATA.glob(f"*/{name}")).read_bytes())
    assert found is not None and found.width == WRAPPED[name]


def test_progress_bar_frames_of_one_width_are_not_a_wrap() -> None:
    """tqdm draws its frames to one width: a run of them (`` 99%|...| 1310/1319 [00:24<00:00, 21.26it/s]``) then
    a result's short lines is a log of whole lines."""
    frames = [f"{p:>3}%|{bar}| {n}/1319 [00:2{k}<00:00, {r}it/s]\n" for k, (p, bar, n, r) in enumerate([
        (99, "\u2588" * 9 + "\u2589", 1310, "21.26"), (100, "\u2588" * 9 + "\u2589", 1313, "21.82"),
        (100, "\u2588" * 9 + "\u2589", 1316, "15.61"), (100, "\u2588" * 9 + "\u2589", 1318, " 4.70"),
        (100, "\u2588" * 10, 1319, "48.81")])]
    log = "".join(frames) + ("Accuracy: 0.935\nInvalid: 0.000\nLatency: 27.148 s\nOutput throughput: 5011.025 "
                             "token/s\nRun 4 completed in 40 seconds\nRun 4: Accuracy: 0.935\n\n")
    assert len({len(f.encode()) for f in frames}) == 1 and wrap_width(log.encode()) is None


def test_a_drawn_table_or_repeated_lines_of_one_width_are_not_a_wrap() -> None:
    smi = (DATA / "nvidia-smi" / "nvidia-smi.txt").read_bytes()
    assert wrap_width(smi) is None
    assert wrap_width(b"".join(b"IndexKernel.cu:94: block: [12,0,0], thread: [%d,0,0] Assertion failed.\n" % i
                               for i in range(10, 40)) + b"RuntimeError: CUDA error\n") is None


def test_compiler_diagnostics_of_one_length_are_not_a_wrap() -> None:
    """A JIT build's clang warnings (wild75 bs07): diagnostics that happen to be of one length, each followed by
    the source excerpt and caret line clang prints under it, are whole lines."""
    def diag(line: int, what: str) -> bytes:
        kind, _, rest = what.partition(": ")
        head = f"/tmp/tmp0j9t6ipg.cpp:{line}:18: {kind}: "
        return (head + rest.rjust(110 - len(head), ".")).encode() + b"\n"  # (one length, ends that differ)

    text = b"".join(diag(n, kind) + b"  %d |   if ((sumexp[0] == 0.000000e+00f)) {\n" % n
                    + b"      |        ~~~~~~~~~~^~~~~~~~~~~~~~~~\n"
                    for n, kind in [(363, "warning: equality comparison with extraneous parentheses"),
                                    (378, "note: remove extraneous parentheses around the comparison"),
                                    (391, "note: use '=' to turn this equality comparison into an assignment")])
    assert wrap_width(text) is None


def test_pprints_items_of_one_length_are_not_a_wrap() -> None:
    """A script's pprint of a dict (wild79 as03): two items of one length, the next indented under the first, are
    a layout, not a terminal's cut."""
    text = (b"ConfigMap sglang-info updated successfully.\n{'api_version': 'v1',\n 'binary_data': None,\n"
            b" 'data': {'sglang-multi-debug-sglang-node-0': '192.168.0.184',\n"
            b"          'sglang-multi-debug-sglang-node-1': '192.168.0.60'},\n 'kind': 'ConfigMap',\n")
    assert wrap_width(text) is None


def test_no_short_stretch_of_a_log_is_taken_for_a_wrap() -> None:
    """Pastes are short: every 12- and 30-line stretch of every log here, as it is and with ``\n`` endings,
    is left alone (one line more than twice a width is enough to see a wrap, so this guards the rule)."""
    wrong = []
    for path in (p for p in LOGS if p.name not in IN_PART):
        lines = plain(path.read_bytes()).splitlines(keepends=True)
        for size in (12, 30):
            for at in range(0, max(1, len(lines) - size), size // 2):
                if wrap_width(b"".join(lines[at:at + size])) is not None:
                    wrong.append(f"{path.name}:{at + 1}+{size}")
    assert not wrong, wrong[:10]


def test_a_short_paste_with_one_line_wrapped_twice_is_joined() -> None:
    """The end of w01's EngineCore traceback and the start of the API server's, pasted from a 90-column
    terminal: its one long line, the ImportError, wrapped into three rows, is enough to see the wrap, and
    the exception's message is whole again."""
    log = plain((DATA / "wild" / "w01_flash_attn_undefined_symbol.log").read_bytes())
    lines = log.replace(b"\x1b[0;36m", b"").replace(b"\x1b[0;0m", b"").splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith(b"(EngineCore_DP0 pid=531757) ImportError: "))
    paste = b"".join(lines[at - 1:at + 1] + lines[at + 2:at + 5])  # less the other process's NCCL warning
    rows = hard_wrapped(paste, 90)
    assert [len(row) for row in rows.split(b"\n")].count(90) == 2
    found = wrap_width(rows)
    assert found is not None and found.width == 90
    rc = analyze_bytes(rows).root_cause
    assert rc is not None and rc.exception == "ImportError"
    assert rc.message.endswith("undefined symbol: _ZNK3c106SymInt6sym_neERKS0_")



def test_a_paste_of_one_exception_line_wrapped_twice_is_joined() -> None:
    """Only the exception line was copied, from a 100-column terminal: three rows, two of them the width; its
    message is whole again (a paste of under six lines is enough when two rows of the width follow each other)."""
    line = (b"ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
            b"stored in KV cache (20688). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
            b"when initializing the engine.\n")
    rows = hard_wrapped(line, 100)
    assert [len(row) for row in rows.split(b"\n")][:2] == [100, 100]
    rc = analyze_bytes(rows).root_cause
    assert rc is not None and rc.exception == "ValueError" and rc.message.endswith("when initializing the engine.")

def _long_lines(path: Path, width: int) -> int:
    return sum(1 for line in plain(path.read_bytes()).split(b"\n") if len(line) > width)


#: Each real log at each width where it has 3 lines or more to be wrapped (fewer: nothing shows a wrap).
WRAPS = [(p, w) for p in REAL for w in (80, 120, 200) if _long_lines(p, w) >= 3]


def test_most_real_logs_have_lines_to_wrap() -> None:
    assert len(WRAPS) >= 2 * len(REAL)


@pytest.mark.parametrize(("path", "width"), WRAPS, ids=lambda v: v.name if isinstance(v, Path) else str(v))
def test_a_wrapped_log_reads_as_the_log_itself(path: Path, width: int) -> None:
    data = path.read_bytes()
    rows = hard_wrapped(data, width)
    found = wrap_width(rows)
    assert found is not None and found.width == width
    notes: list[str] = []
    got, want = analyze_bytes(rows, notes), analyze_bytes(plain(data))
    assert notes and f"hard-wrapped at {width} columns" in notes[0]
    assert (got.failed, got.phase) == (want.failed, want.phase)
    assert got.lines == rows.count(b"\n") + (not rows.endswith(b"\n")) and got.bytes == len(rows)
    if want.root_cause is not None:
        assert got.root_cause is not None
        assert (got.root_cause.exception, got.root_cause.message, got.root_cause.process) == (
            want.root_cause.exception, want.root_cause.message, want.root_cause.process)
        # The line number is the file's: its row starts the line the unwrapped log names.
        file_row = rows.split(b"\n")[got.root_cause.line_no - 1]
        log_line = plain(data).split(b"\n")[want.root_cause.line_no - 1]
        assert log_line.startswith(file_row)


def test_a_wrapped_log_reads_alike_whatever_its_chunks() -> None:
    rows = hard_wrapped((DATA / "real" / "r25_lambo_tp4_worker_oom_cudagraph_then_hang.log").read_bytes(), 120)
    whole = analyze_bytes(rows)
    for size in (4096, 777, 10_000):
        assert analyze_stream(io.BytesIO(rows), size) == whole


def test_an_earlier_try_ends_on_the_last_row_of_its_last_line() -> None:
    """Two tries appended to one log, pasted hard-wrapped; the first ends in a line longer than the width: its
    last line is the file's row where that line ends, and the next try starts on the row after."""
    first = plain((DATA / "real" / "r27_flashinfer_import_typeerror_py311.log").read_bytes())
    first += b"x" * 300 + b"\n"  # a line of three rows at 120 columns
    second = b"INFO 12-03 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\nINFO ok\n"
    rows = hard_wrapped(first, 120).count(b"\n")
    got = analyze_bytes(hard_wrapped(first + second, 120))
    assert [(e.first_line, e.lines) for e in got.earlier] == [(1, rows)]
    assert got.first_line == rows + 1


def test_one_long_line_logged_again_with_other_numbers_is_not_a_wrap() -> None:
    """A notebook cell that builds the engine again and again: its config line comes back as long each time
    (only the timestamp differs), and a line of the tokenizer's follows it.  A length, not a width."""
    config = (b"INFO 06-10 06:%02d:57 llm_engine.py:74] Initializing an LLM engine (v0.4.0.post1) with config: "
              b"model='/kaggle/input/deepseek-math', tokenizer='/kaggle/input/deepseek-math', max_seq_len=4096, "
              b"dtype=torch.float16, seed=0")
    log = b"".join(config % minute + b"\nSpecial tokens have been added in the vocabulary, make sure the associated "
                   b"word embeddings are fine-tuned or trained.\nProcessed prompts: 100%\n" for minute in range(10, 17))
    assert wrap_width(log) is None


def test_rich_log_records_drawn_to_the_console_width_are_not_a_wrap() -> None:
    """``rich`` (speculators' logging) right-aligns each record's source at the console's width: rows of one
    width, whose next lines start in a column of their own.  A layout, not a wrap."""
    def record(time: bytes, text: bytes, source: bytes) -> bytes:
        head = time.ljust(11) + b"INFO     " + text
        return head + b" " * (100 - len(head) - len(source)) + source + b"\n"
    log = b"".join([
        b"Processed prompts: 100%|##########| 24/24 [00:03<00:00,  7.9it/s]\n",
        record(b"[10:02:11]", b"Loaded 24 samples from ultrachat (seq_len 2048)", b"data_generation_offline.py:210"),
        b" " * 20 + b"(first 24 of 3000)".ljust(80) + b"\n",
        record(b"[10:02:12]", b"Writing hidden states to out/hidden_states", b"data_generation_offline.py:233"),
        record(b"", b"Data generation complete!", b"data_generation_offline.py:454"),
        b"Stopping vLLM (PID=3183)\n",
        b"(EngineCore pid=3280) INFO 12-04 10:02:13 [core.py:1238] Shutdown initiated (timeout=0)\n",
    ])
    assert wrap_width(log) is None


def test_buildkit_progress_drawn_to_the_console_width_is_not_a_wrap() -> None:
    """``docker compose up --build`` before the server's log: BuildKit pads each step to the console's width and
    right-aligns its time."""
    steps = [b"[vllm internal] load build definition from Dockerfile", b"=> transferring dockerfile: 512B",
             b"[vllm internal] load metadata for docker.io/vllm/vllm-openai:v0.17.0",
             b"[vllm 1/3] FROM docker.io/vllm/vllm-openai:v0.17.0", b"[vllm 2/3] COPY serve.sh /serve.sh",
             b"exporting to image"]
    log = b"".join(b" => " + step.ljust(150) + b"%.1fs\n" % (i / 10) for i, step in enumerate(steps))
    assert wrap_width(log + b"vllm-1  | INFO 12-04 10:00:00 [api_server.py:1] vLLM API server version 0.17.0\n") is None


def test_a_progress_bars_frames_pasted_as_lines_are_not_a_wrap() -> None:
    """tqdm's frames, one a line once their ``\\r`` became line breaks: the block characters are 3 bytes each, so
    the frames with one more partial block are the longest, and the next frame starts like them but for its
    numbers.  Frames, not rows of a width."""
    blocks = "▏▎▍▌▋▊▉"
    frames = []
    for i in range(20, 44):
        bar = ("█" * (i // 5) + blocks[i % 7]).ljust(20)  # a bare bar (no description): frames start with digits
        frames.append(f"{i:3d}%|{bar}| {i}/100 [{i // 2:02d}:10<30:{i:02d}, 41.{i:02d}s/it]\n".encode())
    assert wrap_width(b"".join(frames)) is None


def test_python_warnings_with_their_source_lines_are_not_a_wrap() -> None:
    """Every rank prints the same warning (``path.py:46: UserWarning: ...``, then its source line indented
    two); with a few log lines of the same length, that is not a terminal's cut."""
    warning = (b"/srv/sglang/python/sglang/srt/layers/quantization/gguf.py:46: UserWarning: Only CUDA support GGUF "
               b"quantization currently.\n  warnings.warn(f\"Only CUDA support GGUF quantization currently.\")\n")
    width = len(warning.split(b"\n")[0])
    record = b"[2025-12-17 01:23:28 DP%d TP1%d EP1%d] modelslim quantization is not fully optimized yet."
    records = [(record % (i, i, i)).ljust(width, b".") + b"\n" for i in range(2)]
    sample = warning + records[0] + records[1] + warning + b"[2025-12-17 01:23:29] Load weight end.\n" + warning
    assert wrap_width(sample) is None


@pytest.mark.parametrize("text", [
    # a score report: two indented ``key: value`` lines of one length, then a title centred in dashes
    ("[Content Validation]\n  Expected: {'A': 'false', 'B': 'true', 'C': 'false', 'D': 'false'}\n"
     "  Predicted: {'A': 'false', 'B': 'false', 'C': 'true', 'D': 'true'}\n  Content validation: MISMATCH\n\n"
     + "-" * 80 + "\n" + " Final Score ".center(80, "-") + "\n  Format: 1\n  Answer: -2\n").encode(),
    # a model's answer: two sentences of one length in bytes, with arrows in them (shorter in columns)
    ("1. (B \u2194 A) means B is true if and only if A is true.\n3. \u00ac(C) means C is false.\n"
     "Let's start with (B \u2228 B) \u2192 (B \u2227 \u00acD). Since (B \u2228 B) is B, we look at B \u2192 (B \u2227 \u00acD), "
     "so D.\n"  # 101 bytes, as long as the next
     "If B is true, then (B \u2227 \u00acD) is true only if D is false. If B is false, the implication is true....\n"
     "Considering (B \u2194 A), B is true if and only if A is true.\nNow let's assume B is true.\n").encode(),
    # a trainer saving its tokenizer: two paths that happen to be as long, each line a sentence of its own
    (b'  "use_sliding_window": false,\n  "vocab_size": 152064\n}\n\n'
     b"chat template saved in /srv/runs/sweep/rho0.10_seed44/chat_template.jinja\n"
     b"tokenizer config file saved in /srv/runs/sweep/rho0.10_seed44/tokenizer_config.json\n"
     b"Special tokens file saved in /srv/runs/sweep/rho0.10_seed44/special_tokens_map.json\n"
     b"chat template saved in /srv/runs/sweep/rho0.10_seed44/chat_template.jinja\n"),
], ids=["report", "answer", "sentences"])
def test_two_lines_of_one_length_in_a_layout_or_in_prose_are_not_a_wrap(text: bytes) -> None:
    """Two rows of the longest length, one after the other, read as one long line cut twice only when the
    rows could be a terminal's cut: not indented like a report's fields, not holding multi-byte characters
    (a terminal cuts at a column), not a title centred in a rule (wild94 wf09), not a row that ends a word
    before a sentence's first word (wild105 rl02)."""
    lines = text.split(b"\n")
    widest = max(map(len, lines))
    assert sum(len(ln) == widest for ln in lines) >= 2
    assert wrap_width(text) is None


def test_rays_remote_error_line_wrapped_in_a_short_paste_still_leads_to_the_workers_exception() -> None:
    """A short paste whose one long line, Ray's ``RayTaskError(X): ray::f() (pid=..., repr=<...>)``, a terminal
    cut at 120 columns (too few rows to tell the width): the row that closes its bracket is the rest of it, and
    the remote worker's frames and exception line after it name the cause, not that row."""
    remote = ("ray.exceptions.RayTaskError(ValueError): ray::Actor.step() (pid=4051, ip=127.0.0.1, "
              "actor_id=a8bc5e2e0f4f7d38c5e1fa9c01000000, repr=<train.Actor object at 0x7f21c3a0b2e0>)")
    lines = [
        "Traceback (most recent call last):",
        '  File "/srv/train.py", line 40, in <module>',
        "    ray.get(actor.step.remote())",
        remote,
        '  File "/srv/train.py", line 21, in step',
        "    self.engine = build_engine(self.args)",
        '  File "/srv/engine.py", line 9, in build_engine',
        "    raise ValueError(\"tensor_parallel_size 8 exceeds the 4 GPUs of this node\")",
        "ValueError: tensor_parallel_size 8 exceeds the 4 GPUs of this node",
    ]
    text = "".join(line + "\n" for line in lines).encode()
    for data in (text, hard_wrapped(text, 120)):
        rc = analyze_bytes(data).root_cause
        assert rc is not None and (rc.exception, rc.message) == (
            "ValueError", "tensor_parallel_size 8 exceeds the 4 GPUs of this node"), rc


def test_an_exception_line_cut_mid_word_at_the_windows_edge_keeps_its_whole_message() -> None:
    """A short paste from a terminal 120 columns wide with one long line, its exception line (too few rows to tell
    the width): the row after it, which goes on mid-word, is the rest of the message, joined where it was cut.
    The same traceback unwrapped, a tool's line after it, and an exception line narrower than a frame line above
    it (no window cuts a row there) keep the line after the exception line out of the message."""
    frames = ['Traceback (most recent call last):', '  File "/srv/prepare.py", line 12, in <module>',
              "    dist.init_process_group(backend='nccl')"]
    message = ("Error initializing torch.distributed using env:// rendezvous: environment variable RANK expected, "
               "but not set")
    line = f"ValueError: {message}"
    wrapped = "\n".join([*frames, line[:120], line[120:], "srun: error: node7: task 0: Exited with exit code 1"])
    rc = analyze_bytes(wrapped.encode() + b"\n").root_cause
    assert rc is not None and (rc.exception, rc.message) == ("ValueError", message), rc
    whole = "\n".join([*frames, line, "srun: error: node7: task 0: Exited with exit code 1"])
    rc = analyze_bytes(whole.encode() + b"\n").root_cause
    assert rc is not None and rc.message == message, rc
    wide = "\n".join([frames[0], '  File "' + "/srv/a-very-long-checkout-path" * 5 + '/prepare.py", line 12, in <module>',
                      frames[2], line[:120], "t not set"])
    rc = analyze_bytes(wide.encode() + b"\n").root_cause
    assert rc is not None and rc.message == line[12:120], rc


def test_a_records_exception_line_cut_at_the_windows_edge_keeps_its_whole_message() -> None:
    """vLLM's records copied from a terminal 120 columns wide, the paste starting inside the engine's traceback: its
    exception line, which quotes a worker's error, is cut mid-word, and the row after it (no writer's prefix) is
    the rest; the quoted worker error is the cause, whole."""
    head = "(EngineCore pid=209) ERROR 05-18 08:21:14 [core.py:1140] "
    line = (f"{head}RuntimeError: Worker failed with error 'AssertionError: auto_functionalized was not removed', "
            "please check the stack trace above for the root cause")
    rows = [f"{head}    raise RuntimeError(", line[:120], line[120:],
            "(Worker_TP0 pid=279) WARNING 05-18 08:21:14 [multiproc_executor.py:884] WorkerProc was terminated"]
    for ending in ("\n", "\r\n"):
        rc = analyze_bytes("".join(row + ending for row in rows).encode()).root_cause
        assert rc is not None and (rc.exception, rc.message, rc.process) == (
            "AssertionError", "auto_functionalized was not removed", "EngineCore"), rc


def test_a_records_exception_line_cut_at_the_edge_then_its_indented_rest_is_one_message() -> None:
    """A record's exception line cut into two rows by a 120-column terminal, then the rest its writer put on an
    indented line after a colon (``...so:`` / `` undefined symbol: ...``): one message again, the cut row joined
    where it was cut, the indented rest after a line break."""
    head = "(VllmWorker rank=3 pid=150413) ERROR 04-24 07:04:06 [multiproc_executor.py:435] "
    so = "/home/me/envs/lmcache_venv/lib/python3.10/site-packages/torchac_cuda.cpython-310-x86_64-linux-gnu.so:"
    line = f"{head}ImportError: {so}"
    assert 120 < len(line) < 240
    rows = [f"{head}Traceback (most recent call last):", f"{head}    import torchac_cuda", line[:120], line[120:],
            " undefined symbol: _ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_RKNSt7__cxx11"]
    rc = analyze_bytes("".join(row + "\n" for row in rows).encode()).root_cause
    assert rc is not None and rc.exception == "ImportError", rc
    assert rc.message == f"{so}\n undefined symbol: _ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_RKNSt7__cxx11", rc


def test_a_records_own_next_line_after_its_exception_line_is_a_line_of_its_message() -> None:
    """A CUDA error record whose advice line follows its exception line in the same record (same head): a line of
    the message after a line break, never glued to it as a row a window cut (only a row of no writer's is)."""
    head = "ERROR 12-03 10:00:00 [core.py:1] "
    record = [head + "Traceback (most recent call last):", head + '  File "core.py", line 1, in run', head + "    step()",
              head + "RuntimeError: CUDA error: an illegal memory access was encountered",
              head + "CUDA kernel errors might be asynchronously reported at some other API call."]
    for ending in ("\r\n", "\n"):
        rc = analyze_bytes((ending.join(record) + "\n").encode()).root_cause
        assert rc is not None and rc.message == ("CUDA error: an illegal memory access was encountered\n"
                                                 "CUDA kernel errors might be asynchronously reported at some other "
                                                 "API call."), rc
