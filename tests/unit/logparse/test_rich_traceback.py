"""rich's boxed traceback (``rich.traceback.install()``, and typer's default when rich is installed): the header
in the box's top rule, the frames inside the box, the exception line after it with its message wrapped at the
box's width (found by the blind set wild114, session 31).  Every text here is written for the test, in the form
rich 13 prints."""

from __future__ import annotations

import pytest

from orchestrator.logparse import analyze_bytes

BOX = (
    "╭──────────── Traceback (most recent call last) ─────────────╮\n"
    "│ /home/me/pipeline/gen_data.py:88 in main                  │\n"
    "│                                                            │\n"
    "│    87 │   cfg = load_config(args.config)                   │\n"
    "│ ❱  88 │   llm = LLM(model=cfg.model, tensor_parallel_size= │\n"
    "│       cfg.tp)                                              │\n"
    "│                                                            │\n"
    "│ /env/lib/python3.12/site-packages/vllm/entrypoints/llm.py: │\n"
    "│ 243 in __init__                                            │\n"
    "╰────────────────────────────────────────────────────────────╯\n"
)
WRAPPED = (
    "RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at\n"
    '"../c10/cuda/CUDACachingAllocator.cpp":995, please report a\n'
    "bug to PyTorch.\n"
)
RUN = "INFO 07-14 12:16:40 llm_engine.py:237] Initializing an LLM engine (v0.6.4.post1) with config: ...\n"


@pytest.mark.parametrize("prefix", ["", "[rank0]: "])
@pytest.mark.parametrize("endings", ["\n", "\r\n"])
def test_a_boxed_traceback_names_its_exception_and_its_whole_wrapped_message(prefix: str, endings: str) -> None:
    text = RUN + "".join(prefix + line for line in (BOX + WRAPPED).splitlines(keepends=True))
    a = analyze_bytes(text.replace("\n", endings).encode())
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "RuntimeError"
    assert rc.message == ('NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":995, '
                          "please report a bug to PyTorch.")
    assert rc.line_no == 2 and rc.traceback is not None and "gen_data.py:88 in main" in rc.traceback


def test_the_line_after_a_message_that_ended_short_is_not_part_of_it() -> None:
    """rich wraps a message at the box's width: a line whose next word would have fitted ended the message."""
    text = BOX + "ValueError: bad --tp value\n" + "Exiting after 1 failed step.\n"
    rc = analyze_bytes(text.encode()).root_cause
    assert rc is not None and rc.exception == "ValueError" and rc.message == "bad --tp value"


PLAIN = ('Traceback (most recent call last):\n  File "/home/me/pipeline/gen_data.py", line 88, in main\n'
         "    llm = LLM(model=cfg.model, tensor_parallel_size=cfg.tp)\n")
MODEL_TYPE = ("The checkpoint you are trying to load has model type `qwen3_moe` but Transformers does not recognize "
              "this architecture.")


def test_a_chained_boxed_traceback_reads_as_the_same_chain_printed_plain() -> None:
    marker = "\nDuring handling of the above exception, another exception occurred:\n\n"
    rich = (BOX + "KeyError: 'qwen3_moe'\n" + marker + BOX
            + "ValueError: The checkpoint you are trying to load has model type\n"
            "`qwen3_moe` but Transformers does not recognize this\n"
            "architecture.\n")
    plain = PLAIN + "KeyError: 'qwen3_moe'\n" + marker + PLAIN + f"ValueError: {MODEL_TYPE}\n"
    got, want = analyze_bytes(rich.encode()).root_cause, analyze_bytes(plain.encode()).root_cause
    assert got is not None and want is not None
    assert (got.exception, got.message, got.signature) == (want.exception, want.message, want.signature)
    assert "During handling" in (got.traceback or "")
