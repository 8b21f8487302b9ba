"""Forms found in the blind sets' residue and in wild157 on (session 35).  Every text here is written for the
test, in the forms the real logs showed.  (A worker's lines run together, their headers without a time stamp:
``test_resplit.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.analyze import SAMPLE
from orchestrator.logparse.spacing import stamp_lines

DATA = Path(__file__).resolve().parents[2] / "data"
#: Logs copied from a log viewer that put a line of its own (time, source) after each of theirs.
STAMPED = {"uf03_sglang_kimi_k3_dspark_dp_attention_draft_kv_pool_oom.log"}


def _log(*lines: str) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


WORKER = "(Worker_TP1 pid=3071) ERROR 06-11 22:40:05 [multiproc_executor.py:871] "


def test_a_workers_announcement_gives_way_to_the_cause_it_announced() -> None:
    """A paste that kept a worker's ``WorkerProc hit an exception.`` and its exception line, not the traceback's
    header: the exception line (a known cause) says what failed, not the announcement."""
    log = "".join(WORKER + text + "\n" for text in [
        "WorkerProc hit an exception.",
        "hidden_states = self.model(input_ids, positions)",  # the source line, its indentation lost
        "torch.AcceleratorError: CUDA error: unspecified launch failure",
    ]).encode()
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.process, rc.line_no) == ("torch.AcceleratorError", "Worker_TP1", 3)
    assert rc.message == "CUDA error: unspecified launch failure"


def test_an_announcement_alone_is_the_cause() -> None:
    rc = analyze_bytes(_log(WORKER + "WorkerProc hit an exception.")).root_cause
    assert rc is not None and rc.line_no == 1 and rc.message == "WorkerProc hit an exception."


def test_another_workers_later_cause_does_not_replace_the_announcement() -> None:
    """Another process's cause, later, is not what this worker announced."""
    other = "(Worker_TP0 pid=3070) ERROR 06-11 22:40:09 [multiproc_executor.py:871] "
    log = (WORKER + "WorkerProc hit an exception.\n"
           + other + "torch.AcceleratorError: CUDA error: unspecified launch failure\n").encode()
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.process, rc.line_no) == ("Worker_TP1", 1)


def test_an_exception_line_under_a_pasted_elision_ends_a_cut_traceback() -> None:
    """A traceback's tail pasted with its indentation lost, the innermost frame's source line replaced by
    ``...``: the bare exception line under it is the exception the job died of (wild157 ua01's form)."""
    log = _log(
        'File ".../vllm/v1/attention/backends/mla/indexer.py", line 412, in forward',
        "topk = self.select_blocks(q, k_cache)",
        'File ".../vllm/utils/deep_gemm.py", line 702, in select_blocks',
        "...",
        "AssertionError",
    )
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.line_no) == ("AssertionError", 5)


def test_an_exception_line_whose_prefix_the_paste_dropped_is_the_statements_above() -> None:
    """The statement's line kept its writer's prefix (its header shortened to ``ERROR ...``), the bare
    exception line under it lost it: the assertion is still the cause (wild158 ub07's form)."""
    log = (b"(EngineCore pid=77) INFO 07-01 10:00:01 [core.py:120] scheduling 1 request\n"
           b"(EngineCore pid=77) ERROR ... assert num_blocks % group_size == 0\n"
           b"AssertionError\n")
    a = analyze_bytes(log)
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message) == ("AssertionError", "assert num_blocks % group_size == 0")
    raised = analyze_bytes(b"(Worker pid=9) ERROR ... raise KVCacheError(msg)\nKVCacheError: no free blocks\n").root_cause
    assert raised is not None and (raised.exception, raised.message) == ("KVCacheError", "no free blocks")


def test_another_writers_statement_does_not_make_an_exception_name_a_traceback() -> None:
    """Only the statement that raises that very exception joins the two lines."""
    a = analyze_bytes(b"(Worker pid=9) ERROR ... raise KVCacheError(msg)\nTimeoutError\n")
    assert a.root_cause is None or a.root_cause.exception != "TimeoutError"


def test_sglangs_report_of_a_scheduler_killed_by_a_signal_is_the_cause() -> None:
    """SGLang's launcher says its rank-0 scheduler is dead and its exit code, negative: killed by that signal;
    the launcher's ``EOFError`` on the pipe after it is what the death did (wild158 ub02's form)."""
    log = (b"[2026-02-11 08:13:40] Load weight begin. avail mem=77.12 GB\n"
           b"[2026-02-11 08:14:02] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
           b"[2026-02-11 08:14:02] Exit code: -9\n"
           b"Traceback (most recent call last):\n"
           b'  File "/opt/sglang/srt/entrypoints/engine.py", line 740, in _launch_subprocesses\n'
           b"    data = scheduler_pipe_readers[i].recv()\n"
           b"EOFError\n")
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.signature, rc.message, rc.line_no) == ("sglang_rank_signalled", "Exit code: -9", 3)
    assert "OOM killer" in (rc.hint or "")


def test_an_exit_code_of_an_ordinary_failure_is_not_a_signal() -> None:
    rc = analyze_bytes(b"[2026-02-11 08:14:02] Exit code: 1\n").root_cause
    assert rc is None or rc.signature != "sglang_rank_signalled"


@pytest.mark.parametrize("indent", ["  ", ""], ids=["as printed", "indentation lost"])
def test_a_record_whose_traceback_goes_on_in_raw_lines_is_read_whole(indent: str) -> None:
    """A logger that gives only a record's first line its header (logging's own formatter): the traceback's
    frames and exception line follow raw, and they are the record's traceback (wild158 ub05's form)."""
    log = _log(
        "ERROR 03-02 11:20:41 [loader.py:233] Failed to load the draft model",
        "ERROR 03-02 11:20:41 [loader.py:233] Traceback (most recent call last):",
        indent + 'File "/srv/app/loader.py", line 230, in load_draft',
        indent * 2 + "state = torch.load(path)",
        indent + 'File "/srv/app/torch_io.py", line 91, in load',
        indent * 2 + "raise FileNotFoundError(path)",
        "FileNotFoundError: /models/draft/pytorch_model.bin",
    )
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("FileNotFoundError", 2)
    assert rc.traceback is not None and 'File "/srv/app/torch_io.py", line 91, in load' in rc.traceback


#: One request's chat template failed, logged by the renderer and by the Anthropic router, and answered 500.
_TEMPLATE = ["An error occurred in `transformers` while applying chat template", "Traceback (most recent call last):",
             '  File "/venv/vllm/renderers/hf.py", line 789, in safe_apply_chat_template',
             "    plain = tokenizer.apply_chat_template(",
             '  File "/venv/transformers/utils/chat_template_utils.py", line 479, in raise_exception',
             "    raise jinja2.exceptions.TemplateError(message)",
             "jinja2.exceptions.TemplateError: Unknown content block type: tool_result"]
_ROUTER = ["Error in create_messages: Unknown content block type: tool_result", "Traceback (most recent call last):",
           '  File "/venv/vllm/entrypoints/anthropic/api_router.py", line 71, in create_messages',
           "    generator = await handler.create_messages(request, raw_request)",
           '  File "/venv/vllm/renderers/hf.py", line 800, in safe_apply_chat_template',
           "    raise ValueError(str(e)) from e",
           "ValueError: Unknown content block type: tool_result"]


def test_a_chat_template_error_answered_by_the_anthropic_router_is_one_requests() -> None:
    """The renderer's record of a template error and the Anthropic router's (``api_router.py``) are one
    request's failure, answered 500: the server has not failed."""
    a_head = "(APIServer pid=88) ERROR 03-02 11:20:41 [hf.py:797] "
    r_head = "(APIServer pid=88) ERROR 03-02 11:20:41 [api_router.py:73] "
    log = "".join([*(a_head + line + "\n" for line in _TEMPLATE), *(r_head + line + "\n" for line in _ROUTER),
                   ('(APIServer pid=88) INFO:     127.0.0.1:50412 - "POST /v1/messages HTTP/1.1" 500 Internal '
                    "Server Error\n")]).encode()
    assert not analyze_bytes(log).failed


def test_a_pasted_tail_with_its_indentation_lost_is_read_without_a_record() -> None:
    """A traceback's tail, no header, every line at column 0 (a paste rendered as text), no log prefix: the
    frame line above the exception line makes it the traceback's end (wild160 ue02's form, flattened)."""
    a = analyze_bytes(_log(
        "Loading safetensors checkpoint shards:  40% Completed | 26/64 [03:12<04:41,  7.4s/it]",
        'File "vllm/model_executor/models/kimi_k25.py", line 802, in load_weights',
        "param = params_dict[name]",
        "KeyError: 'model.layers.61.mlp.experts.w2_weight_scale_inv'",
    ))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.line_no) == ("KeyError", 4)


def test_an_error_line_far_below_a_frame_line_is_no_traceback_end() -> None:
    lines = ['File "notes.txt", line 3, in appendix', *(f"step {i} ok" for i in range(8)), "ValueError: x"]
    rc = analyze_bytes(_log(*lines)).root_cause
    assert rc is None or rc.line_no != len(lines) or rc.traceback is None or "notes.txt" not in rc.traceback


_VIEWER = "2026-03-14 09:12:55  train-job-7f3a-worker-0  "


def test_a_log_viewers_line_between_every_two_lines_is_read_without_them() -> None:
    """A log viewer's copy with the entry's time and source on a line of its own after each line (wild161
    uf03's form): the raw traceback they broke up is read whole, line numbers the file's."""
    lines = ["[2026-03-14 09:12:50 TP0] Load weight end. mem usage=61.02 GB",
             "[2026-03-14 09:12:55 TP0] Scheduler hit an exception: Traceback (most recent call last):",
             '  File "/sgl/srt/managers/scheduler.py", line 975, in init_memory_pools',
             "    self.token_to_kv_pool = MHATokenToKVPool(",
             '  File "/sgl/srt/mem_cache/memory_pool.py", line 412, in _create_buffers',
             "    torch.zeros((self.size + 1, self.head_num, self.head_dim), dtype=self.dtype)",
             ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.50 GiB. GPU 0 has a total capacity "
              "of 79.10 GiB of which 2.13 GiB is free.")]
    notes: list[str] = []
    a = analyze_bytes(_log(*(f"{line}\n{_VIEWER}" for line in lines)), notes)
    assert a.root_cause is not None and a.root_cause.exception == "torch.OutOfMemoryError"
    assert a.root_cause.message.startswith("CUDA out of memory. Tried to allocate 9.50 GiB")
    assert a.root_cause.line_no == 3 and a.lines == 2 * len(lines)  # the header's line in the file
    assert notes and "log viewer's line" in notes[0]


@pytest.mark.parametrize("path", [p for p in sorted(DATA.glob("*/*.log")) if p.name not in STAMPED],
                         ids=lambda p: p.name)
def test_a_log_without_a_viewers_lines_is_left_alone(path: Path) -> None:
    assert stamp_lines(path.read_bytes()[:SAMPLE]) is None


def test_an_exception_named_by_its_module_under_a_frame_ends_a_cut_traceback() -> None:
    """``triton.runtime.errors.OutOfResources: ...`` (a class whose name does not say it is an error) right under
    a frame of a tail whose header was cut: the exception the job died of (wild163 uh04's form)."""
    a = analyze_bytes(_log(
        '  File ".../vllm/v1/attention/ops/prefix_prefill.py", line 812, in context_attention_fwd',
        "    _fwd_kernel[grid](",
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 114688, Hardware limit: "
        "101376. Reducing block sizes or `num_stages` may help.",
    ))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.signature) == ("triton.runtime.errors.OutOfResources",
                                                                "triton_out_of_resource")


def test_a_module_path_and_a_colon_without_a_frame_above_is_no_exception_line() -> None:
    a = analyze_bytes(_log("starting the server", "config.model.Settings: loaded from /etc/app.toml", "ready"))
    assert a.root_cause is None


@pytest.mark.parametrize("inner", ["2025-05-15 04:58:02 | ERROR | stderr | ",
                                   "2025-11-02 18:20:07.114 [Error] (Process) ",
                                   "[1,0]<stderr>:"], ids=["FastChat's", "a supervisor's", "mpirun's"])
@pytest.mark.parametrize("outer", ["2026-01-09T10:04:41.118200931Z ", "Jan 09 10:04:41 gpu-3 python[8812]: "],
                         ids=["kubectl's", "the journal's"])
def test_a_jobs_own_prefix_collected_again_is_read_through(inner: str, outer: str) -> None:
    """A FastChat worker's, a supervisor's or mpirun's prefix on every line, and a collector's stamp in front of
    it (the job run by Kubernetes or systemd): both are prefixes, the traceback behind them is read."""
    log = _log(*(outer + inner + line for line in [
        "Traceback (most recent call last):",
        '  File "/srv/fastchat/serve/vllm_worker.py", line 290, in <module>',
        "    engine = AsyncLLMEngine.from_engine_args(engine_args)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.",
    ]))
    rc = analyze_bytes(log).root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("torch.OutOfMemoryError", 1)
    assert rc.traceback is not None and "vllm_worker.py\", line 290" in rc.traceback


def test_an_exception_line_a_terminal_wrapped_inside_brackets_is_read_whole() -> None:
    """A raw exception line cut by a terminal's wrap where a bracket stood open (``... KV cache (``, then
    ``7344). Try increasing ...``): the message goes on, without a line break where the wrap put one."""
    a = analyze_bytes(_log(
        "Traceback (most recent call last):",
        '  File "/opt/vllm/engine/llm_engine.py", line 412, in _init_cache',
        "    raise ValueError(",
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (",
        "7344). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
        "Traceback (most recent call last):",
        '  File "/opt/app/run.py", line 3, in <module>',
        "    main()",
        "RuntimeError: server exited",
    ))
    rc = a.root_cause
    assert rc is not None and rc.exception == "ValueError"
    assert "stored in KV cache (7344). Try increasing" in rc.message


def test_a_line_after_a_balanced_exception_line_is_not_its_message() -> None:
    rc = analyze_bytes(_log("Traceback (most recent call last):", '  File "/a.py", line 1, in <module>', "    f(x)",
                            "KeyError: 'layers.0.weight' (not found)", "Saving the partial state")).root_cause
    assert rc is not None and rc.message == "'layers.0.weight' (not found)"


def test_a_workers_exception_record_under_a_pasted_statement_is_the_cause() -> None:
    """A paste that begins at the innermost frame's statement (no prefix) and goes on with the worker's record of
    the exception line: that exception is the cause (wild164 ui05's form)."""
    a = analyze_bytes(_log(
        "from lmcache.v1.storage_backend import CreateStorageBackends",
        "(VllmWorker rank=1 pid=7710) ERROR 04-24 07:04:06 [multiproc_executor.py:435] ImportError: "
        "/venv/lib/python3.10/site-packages/lmcache/c_ops.so: undefined symbol: _ZN3c104cuda9SetDeviceEa",
    ))
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.process) == ("ImportError", "VllmWorker rank=1")


def test_a_workers_exception_record_under_a_line_of_prose_is_not_a_traceback() -> None:
    a = analyze_bytes(_log("Restarting the workers now.",
                           "(VllmWorker rank=1 pid=7710) WARNING 04-24 07:04:06 [utils.py:35] ImportError: no triton"))
    assert not a.failed


WRAPPED_RECORD = ("(VllmWorker rank=1 pid=7710) ERROR 04-24 07:04:06 [multiproc_executor.py:435] ImportError: "
                  "/venv/lib/python3.10/site-packages/torchac_cuda.cpython-310-x86_64-linux-gnu.so:")


@pytest.mark.parametrize("before", [[], ["from lmcache.v1.storage_backend import CreateStorageBackends"]])
def test_the_rest_of_a_workers_exception_record_a_paste_wrapped_is_its_message(before: list[str]) -> None:
    """A worker's exception record whose message a paste wrapped after a colon: the rest sits on the next line,
    raw and indented (session 36; wild164 ui05's form)."""
    a = analyze_bytes(_log(*before, WRAPPED_RECORD, " undefined symbol: _ZN3c106detail23torchInternalAssertFailEPKc"))
    rc = a.root_cause
    assert rc is not None and (rc.exception, rc.process) == ("ImportError", "VllmWorker rank=1")
    assert rc.message.endswith("gnu.so:\n undefined symbol: _ZN3c106detail23torchInternalAssertFailEPKc")


@pytest.mark.parametrize("after", ['  File "/opt/app/run.py", line 3, in <module>', "  ValueError: bad", "done.",
                                   "(VllmWorker rank=2 pid=7711) INFO 04-24 07:04:07 [worker.py:1] ready"])
def test_a_line_after_a_workers_exception_record_is_not_its_message_unless_it_goes_on_from_it(after: str) -> None:
    rc = analyze_bytes(_log(WRAPPED_RECORD, after)).root_cause
    assert rc is not None and rc.message.endswith("gnu.so:")


@pytest.mark.parametrize("panic", [
    ["thread 'tokio-runtime-worker' panicked at lib/engines/vllm/src/worker.rs:247:17:",
     ("Failed to import python 'vllm' module. Are we running in the correct venv? AttributeError: class must define "
      "a '_type_' attribute")],
    [("thread 'main' panicked at 'Failed to import python module: ModuleNotFoundError: No module named 'msgspec'', "
      "src/worker.rs:31:9")],
])
def test_a_rust_panic_that_quotes_a_python_error_is_that_error(panic: list[str]) -> None:
    """A Rust host (Dynamo's engine worker) panics reporting the exception Python raised when it called in (PyO3
    shows it as ``AttributeError: ...``): that exception is the cause (session 36; wild164 ui06's form)."""
    a = analyze_bytes(_log(*panic, "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"))
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception in ("AttributeError", "ModuleNotFoundError")
    assert rc.signature == "rust_panic" and "panicked at" in rc.message


def test_a_rust_panic_that_quotes_no_python_error_is_the_panic() -> None:
    a = analyze_bytes(_log("thread 'main' panicked at src/router.rs:589:79:",
                           "called `Result::unwrap()` on an `Err` value: PoisonError { .. }"))
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception is None and rc.signature == "rust_panic"
