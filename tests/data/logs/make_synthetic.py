"""Write the synthetic vLLM 0.16 / TP=8 fixtures of this directory (``v016_*.log``).

They are built from the exact strings vLLM 0.16 prints (shared notes ``vllm-log-strings.md``) and the user's
story (a 64-shard Kimi-K2.5 load, TP=8, speculators hidden-state extraction).  0.16 writes the stream
prefix ``(Worker_TP3 pid=N) `` in front of every line a process writes; a multi-line record ends each line
but the last with ``\\r\\n``; tqdm frames start with ``\\r`` after the prefix.

Run ``python tests/data/logs/make_synthetic.py`` to regenerate; the ``.expected.json`` files are kept by hand.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
PIDS = {f"Worker_TP{i}": 255658 + i for i in range(8)}
ENGINE = ("EngineCore_DP0", 255500)
MODEL = "/shared/kimi-k2.5-int4"


def rec(proc: str, pid: int, level: str, ts: str, where: str, *lines: str) -> bytes:
    """One log record, as NewLineFormatter + the stream prefix write it."""
    head = f"{level} 02-21 {ts} [{where}] "
    out = [f"({proc} pid={pid}) {head}{line}" for line in lines]
    return ("\r\n".join(out) + "\n").encode()


def w(i: int, level: str, ts: str, where: str, *lines: str) -> bytes:
    name = f"Worker_TP{i}"
    return rec(name, PIDS[name], level, ts, where, *lines)


def eng(level: str, ts: str, where: str, *lines: str) -> bytes:
    return rec(ENGINE[0], ENGINE[1], level, ts, where, *lines)


def raw(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def startup(tp: int = 8) -> bytes:
    out = raw(
        "INFO 02-21 21:24:50 [__init__.py:216] Automatically detected platform cuda.",
        "Loading model /shared/kimi-k2.5-int4 with tp=8, layers [2, 30, 58, 60]",
    )
    out += eng("INFO", "21:25:01", "core.py:98",
               f"Initializing a V1 LLM engine (v0.16.0rc2.dev87+g5a2bc1f) with config: model='{MODEL}', "
               f"speculative_config=None, tokenizer='{MODEL}', tensor_parallel_size={tp}, "
               "quantization=compressed-tensors, enforce_eager=False, kv_cache_dtype=auto")
    for i in range(tp):
        out += w(i, "INFO", "21:25:09", "parallel_state.py:1203",
                 f"rank {i} in world size {tp} is assigned as DP rank 0, PP rank 0, TP rank {i}, EP rank {i}")
    out += w(0, "INFO", "21:25:10", "pynccl.py:112", "vLLM is using nccl==2.27.3")
    for i in range(tp):
        out += w(i, "INFO", "21:25:12", "gpu_model_runner.py:4125", f"Starting to load model {MODEL}...")
    out += w(2, "INFO", "21:25:14", "compressed_tensors_moe.py:199", "Using CompressedTensorsWNA16MarlinMoEMethod")
    return out


def shard_frames(upto: int, total: int = 64, tp0: str = "Worker_TP0", start_s: int = 0) -> bytes:
    """0.16's loader bar: prefix, then "\\r" + frame + "\\n" for each refresh (rank 0 only)."""
    pid = PIDS[tp0]
    out = b""
    for k in range(upto + 1):
        pct = round(100 * k / total)
        elapsed = start_s + k * 17
        if k == 0:
            tail = "[00:00<?, ?it/s]"
        else:
            rem = (total - k) * 17
            tail = (f"[{elapsed // 60:02d}:{elapsed % 60:02d}<{rem // 60:02d}:{rem % 60:02d}, "
                    f"{17.0 + (k % 3) * 0.5:.2f}s/it]")
        frame = f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {k}/{total} {tail}"
        out += f"({tp0} pid={pid}) \r{frame}\n".encode()
    return out


def loaded(tp: int = 8) -> bytes:
    out = f"(Worker_TP0 pid={PIDS['Worker_TP0']}) \n".encode()
    out += w(0, "INFO", "21:43:01", "default_loader.py:294", "Loading weights took 1071.42 seconds")
    for i in range(tp):
        out += w(i, "INFO", "21:43:02", "gpu_model_runner.py:4222",
                 "Model loading took 67.83 GiB memory and 1075.210043 seconds")
    out += w(0, "INFO", "21:43:20", "gpu_worker.py:374", "Available KV cache memory: 12.41 GiB")
    out += eng("INFO", "21:43:21", "kv_cache_utils.py:1307", "GPU KV cache size: 412,512 tokens")
    out += eng("INFO", "21:43:21", "kv_cache_utils.py:1313",
               "Maximum concurrency for 2,048 tokens per request: 201.42x")
    frames = "".join(
        f"\rCapturing CUDA graphs (mixed prefill-decode, PIECEWISE): {100 * k // 67:3d}%|"
        f"{'#' * (k // 7):<10}| {k}/67 [00:{k // 5:02d}<00:{(67 - k) // 5:02d}, {5.1 + k / 100:.2f}it/s]"
        for k in range(0, 68, 6)
    )
    out += f"(Worker_TP0 pid={PIDS['Worker_TP0']}) {frames}\n".encode()
    out += w(0, "INFO", "21:43:40", "gpu_model_runner.py:5247", "Graph capturing finished in 18 secs, took 1.21 GiB")
    out += eng("INFO", "21:43:41", "core.py:279",
               "init engine (profile, create kv cache, warmup model) took 39.52 seconds")
    return out


def worker_tb(i: int, ts: str, header: str, frames: list[str], exc: str) -> list[bytes]:
    """The lines of one worker's logger.exception record (returned line by line, for interleaving)."""
    lines = [header, "Traceback (most recent call last):", *frames, exc]
    name = f"Worker_TP{i}"
    head = f"({name} pid={PIDS[name]}) ERROR 02-21 {ts} [multiproc_executor.py:863] "
    return [(head + line + ("\r\n" if k < len(lines) - 1 else "\n")).encode() for k, line in enumerate(lines)]


def interleave(streams: list[list[bytes]]) -> bytes:
    out = b""
    k = 0
    while any(k < len(s) for s in streams):
        for s in streams:
            if k < len(s):
                out += s[k]
        k += 1
    return out


BLOCK_FRAMES = [
    '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 858, in worker_busy_loop',
    "    output = func(*args, **kwargs)",
    "             ^^^^^^^^^^^^^^^^^^^^^",
    '  File "/root/eagle3-train/custom_worker.py", line 211, in _capture_step',
    "    blocks = self.kv_cache_manager.allocate_slots(request, num_tokens)",
    "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/core/kv_cache_manager.py", line 318, in allocate_slots',
    "    self.coordinator.cache_blocks(request, num_tokens_to_cache)",
    '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/core/block_pool.py", line 211, in cache_full_blocks',
    "    assert len(request.block_hashes) >= num_full_blocks",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
]


def engine_echo(ts: str, msg: str) -> bytes:
    return eng("ERROR", ts, "core.py:1008", "EngineCore encountered a fatal error.",
               "Traceback (most recent call last):",
               '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 999, in run_engine_core',
               "    engine_core.run_busy_loop()",
               '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 359, in get_response',
               "    raise RuntimeError(",
               f"RuntimeError: Worker failed with error '{msg}', please check the stack trace above for the root cause")


def symptoms(ts: str, order: list[int], shutting: bool = True) -> bytes:
    out = b""
    for i in order:
        out += w(i, "INFO", ts, "multiproc_executor.py:732", "Parent process exited, terminating worker")
    if shutting:
        for i in sorted(order):
            out += w(i, "INFO", ts, "multiproc_executor.py:785", "WorkerProc shutting down.")
    return out


def block_hasher_crash() -> bytes:
    out = startup() + shard_frames(64) + loaded()
    out += raw("Extracting hidden states for 10 samples (batch size 4)")
    order = [3, 7, 0, 5, 1, 2, 4, 6]
    out += interleave([worker_tb(i, "21:43:12", "WorkerProc hit an exception.", BLOCK_FRAMES, "AssertionError")
                       for i in order])
    out += engine_echo("21:43:12", "")
    out += raw(
        "Traceback (most recent call last):",
        '  File "/root/eagle3-train/02_extract_hidden_states.py", line 126, in main',
        "    results = generator.generate(token_ids_batch)",
        "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        '  File "/root/ml-env/lib/python3.12/site-packages/speculators/data_generation/vllm_hidden_states_generator.py", line 253, in generate',
        "    scheduler_output := self.scheduler.schedule()",
        '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/engine/core_client.py", line 651, in get_output',
        "    raise self._format_exception(outputs) from None",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
        "ERROR: EngineCore encountered an issue. See stack trace (above) for the root cause.",
    )
    out += symptoms("21:43:13", [3, 7, 0, 5, 1, 2, 4, 6])
    return out


def oom_loading() -> bytes:
    out = startup(tp=2) + shard_frames(40)
    frames = [
        '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 4190, in load_model',
        "    self.model = model_loader.load_model(",
        '  File "/root/ml-env/lib/python3.12/site-packages/vllm/model_executor/model_loader/default_loader.py", line 290, in load_weights',
        "    loaded_weights = model.load_weights(self.get_all_weights(model_config, model))",
        '  File "/root/ml-env/lib/python3.12/site-packages/torch/utils/_device.py", line 104, in __torch_function__',
        "    return func(*args, **kwargs)",
    ]
    exc = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity "
           "of 94.97 GiB of which 1.13 GiB is free. Of the allocated memory 92.10 GiB is allocated by PyTorch.")
    out += w(1, "ERROR", "21:36:40", "gpu_model_runner.py:4212",
             "Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free "
             "memory for weights, increasing --tensor-parallel-size, or using --quantization. "
             "(original error: CUDA out of memory. Tried to allocate 2.00 GiB.)")
    out += b"".join(worker_tb(1, "21:36:40", "WorkerProc failed to start.", frames, exc))
    out += eng("ERROR", "21:36:41", "core.py:1006", "EngineCore failed to start.",
               "Traceback (most recent call last):",
               '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 359, in get_response',
               "    raise RuntimeError(",
               "RuntimeError: Worker failed with error 'CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has "
               "a total capacity of 94.97 GiB of which 1.13 GiB is free.', please check the stack trace above "
               "for the root cause")
    out += raw(
        "Traceback (most recent call last):",
        '  File "/root/eagle3-train/02_extract_hidden_states.py", line 98, in main',
        "    generator = VllmHiddenStatesGenerator(args.model_path, tensor_parallel_size=args.tp_size)",
        '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/engine/utils.py", line 985, in wait_for_engine_startup',
        "    raise RuntimeError(",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    )
    out += w(0, "INFO", "21:36:42", "multiproc_executor.py:732", "Parent process exited, terminating worker")
    return out


def load84_killed() -> bytes:
    out = startup() + shard_frames(54)
    out += eng("ERROR", "21:41:02", "multiproc_executor.py:248",
               "Worker proc Worker_TP5 died unexpectedly, shutting down executor.")
    out += rec("main", 255394, "ERROR", "21:41:03", "core_client.py:617",
               "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.")
    out += symptoms("21:41:03", [0, 1, 2, 3, 4, 6, 7], shutting=False)
    return out


def nccl_error() -> bytes:
    out = startup(tp=4)
    frames = [
        '  File "/root/ml-env/lib/python3.12/site-packages/vllm/distributed/parallel_state.py", line 1211, in init_distributed_environment',
        "    _WORLD = init_world_group(ranks, local_rank, backend)",
        '  File "/root/ml-env/lib/python3.12/site-packages/vllm/distributed/device_communicators/pynccl_wrapper.py", line 373, in NCCL_CHECK',
        "    raise RuntimeError(f\"NCCL error: {error_str}\")",
    ]
    exc = "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    out += interleave([worker_tb(i, "21:25:11", "WorkerProc failed to start.", frames, exc) for i in (2, 0)])
    out += eng("ERROR", "21:25:12", "core.py:1006", "EngineCore failed to start.",
               "Traceback (most recent call last):",
               '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 359, in get_response',
               "    raise RuntimeError(",
               "RuntimeError: Worker failed with error 'NCCL error: unhandled system error (run with "
               "NCCL_DEBUG=INFO for details)', please check the stack trace above for the root cause")
    out += symptoms("21:25:12", [1, 3])
    return out


def hang_broadcast() -> bytes:
    out = startup(tp=2) + shard_frames(64) + loaded(tp=2)
    out += raw("Processed 3/10 samples", "Processed 4/10 samples")
    for k in range(5):
        out += eng("WARNING", f"21:{45 + k}:41", "shm_broadcast.py:83",
                   "No available shared memory broadcast block found in 60 second.")
    return out


def clean_done() -> bytes:
    out = startup() + shard_frames(64) + loaded()
    out += raw(*(f"Processed {k}/10 samples" for k in range(1, 11)))
    out += raw("Saved 10 hidden-state files to /root/eagle3-train/data_test/hidden_states", "Done.")
    out += symptoms("21:45:02", [3, 7, 0, 5, 1, 2, 4, 6])
    return out


def empty_error() -> bytes:
    out = startup() + shard_frames(64) + loaded()
    out += raw("Extracting hidden states for 10 samples (batch size 4)", "ERROR: ")
    for i in (1, 2, 4, 6, 7, 0, 3, 5):
        out += w(i, "INFO", "21:14:12", "multiproc_executor.py:785", "WorkerProc shutting down.")
    return out


def sample_tokens_chain() -> bytes:
    out = startup(tp=2) + shard_frames(64) + loaded(tp=2)
    out += raw(
        "Traceback (most recent call last):",
        '  File "/root/ml-env/lib/python3.12/site-packages/speculators/data_generation/vllm_hidden_states_generator.py", line 268, in generate',
        "    output = self.executor.execute_model(scheduler_output)",
        '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2710, in execute_model',
        "    raise RuntimeError(",
        "RuntimeError: sample_tokens() must be called after execute_model() returns None.",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/root/eagle3-train/02_extract_hidden_states.py", line 131, in main',
        "    generator.shutdown()",
        '  File "/root/ml-env/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 402, in shutdown',
        "    raise TimeoutError(f\"RPC call to {method} timed out.\")",
        "TimeoutError: RPC call to shutdown timed out.",
    )
    out += symptoms("21:50:02", [0, 1])
    return out


def ansi_crlf_nul() -> bytes:
    """A TTY-coloured 0.16 log saved with CRLF line ends, a NUL and invalid UTF-8 inside."""
    cyan, red, reset = "\x1b[36m", "\x1b[31m", "\x1b[0m"
    pid = PIDS["Worker_TP0"]

    def line(text: str) -> bytes:
        return (text + "\r\n").encode()

    out = line(f"{cyan}(Worker_TP0 pid={pid}){reset} INFO 02-21 21:25:12 [gpu_model_runner.py:4125] "
               f"Starting to load model {MODEL}...")
    out += f"{cyan}(Worker_TP0 pid={pid}){reset} \rLoading safetensors checkpoint shards:  50% Completed | 32/64 [09:04<09:04, 17.00s/it]\r\n".encode()
    out += line("Weird bytes: \x00") + b"\xff\xfe broken \xc3( utf-8\r\n"
    tb = ["Traceback (most recent call last):",
          '  File "/root/eagle3-train/custom_worker.py", line 88, in _patched_forward',
          "    if hidden_states:",
          "RuntimeError: Boolean value of Tensor with more than one value is ambiguous"]
    for k, text in enumerate(tb):
        end = "\r\r\n" if k < len(tb) - 1 else "\r\n"
        out += (f"{cyan}(Worker_TP0 pid={pid}){reset} {red}ERROR{reset} 02-21 21:31:40 "
                f"[multiproc_executor.py:863] {text}{end}").encode()
    out += line(f"{cyan}(Worker_TP1 pid={PIDS['Worker_TP1']}){reset} INFO 02-21 21:31:41 "
                "[multiproc_executor.py:785] WorkerProc shutting down.")
    return out


FIXTURES = {
    "v016_tp8_block_hasher_crash": block_hasher_crash,
    "v016_oom_while_loading": oom_loading,
    "v016_load84_worker_killed": load84_killed,
    "v016_nccl_error": nccl_error,
    "v016_hang_broadcast_wait": hang_broadcast,
    "v016_clean_done": clean_done,
    "v016_empty_error": empty_error,
    "v016_chained_sample_tokens": sample_tokens_chain,
    "v016_ansi_crlf_nul": ansi_crlf_nul,
}


def main() -> None:
    for name, build in FIXTURES.items():
        (HERE / f"{name}.log").write_bytes(build())


if __name__ == "__main__":
    main()
