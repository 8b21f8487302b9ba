"""Forms found in the blind sets' residue and in wild157 on (session 35).  Every text here is written for the
test, in the forms the real logs showed.  (A worker's lines run together, their headers without a time stamp:
``test_resplit.py``.)"""

from __future__ import annotations

from orchestrator.logparse import analyze_bytes


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


def test_a_record_whose_traceback_goes_on_in_raw_lines_is_read_whole() -> None:
    """A logger that gives only a record's first line its header (logging's own formatter): the traceback's
    frames and exception line follow raw, and they are the record's traceback (wild158 ub05's form)."""
    log = _log(
        "ERROR 03-02 11:20:41 [loader.py:233] Failed to load the draft model",
        "ERROR 03-02 11:20:41 [loader.py:233] Traceback (most recent call last):",
        '  File "/srv/app/loader.py", line 230, in load_draft',
        "    state = torch.load(path)",
        '  File "/srv/app/torch_io.py", line 91, in load',
        "    raise FileNotFoundError(path)",
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
