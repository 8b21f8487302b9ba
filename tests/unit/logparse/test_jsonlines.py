"""Logs kept as JSON records by a collector (Docker's json-file driver, ``journalctl -o json``, a Cloud Logging
export, Kaggle's notebook log): read as the text they carry, with the file's line numbers."""

from __future__ import annotations

import json

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.jsonlines import json_key, pretty_json_key

LOG = [
    "INFO 12-04 10:00:00 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000\n",
    "(EngineCore_DP0 pid=61) INFO 12-04 10:00:01 [gpu_model_runner.py:2020] Starting to load model /srv/m...\n",
    "Traceback (most recent call last):\n",
    '  File "/srv/app/serve.py", line 12, in <module>\n',
    "    load(config)\n",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.1 GiB\n",
]


def _docker(lines: list[str], split_at: int | None = None) -> bytes:
    """Docker's json-file: one record a line; a long line is cut into records, only the last with its \\n."""
    records = []
    for i, line in enumerate(lines):
        stream = "stderr" if i >= 2 else "stdout"
        pieces = [line] if split_at is None or len(line) <= split_at else [line[:split_at], line[split_at:]]
        records += [json.dumps({"log": p, "stream": stream, "time": f"2026-12-04T10:00:0{i}Z"}) for p in pieces]
    return "".join(r + "\n" for r in records).encode()


def _journal(lines: list[str]) -> bytes:
    return "".join(json.dumps({"__CURSOR": f"s=1;i={i}", "_PID": "61", "MESSAGE": line.rstrip("\n")},
                              separators=(", ", " : ")) + "\n" for i, line in enumerate(lines)).encode()


def _cloud_logging(lines: list[str]) -> bytes:
    return "".join(json.dumps({"insertId": f"x{i}", "textPayload": line.rstrip("\n"), "severity": "DEFAULT"}) + "\n"
                   for i, line in enumerate(lines)).encode()


def _kaggle(lines: list[str]) -> bytes:
    records = [json.dumps({"stream_name": "stderr", "time": 6.99 + i, "data": line}, separators=(",", ":"))
               for i, line in enumerate(lines)]
    return ("[" + "\n,".join(records) + "\n]").encode()


@pytest.mark.parametrize("form", [_docker, _journal, _cloud_logging, _kaggle],
                         ids=["docker", "journalctl", "cloud-logging", "kaggle"])
def test_a_collectors_json_records_are_read_as_the_log_they_carry(form: object) -> None:
    notes: list[str] = []
    data = form(LOG)  # type: ignore[operator]
    a = analyze_bytes(data, notes)
    rc = a.root_cause
    assert a.failed and rc is not None and (rc.exception, rc.line_no) == ("torch.OutOfMemoryError", 3)
    assert rc.message.startswith("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert a.lines == len(data.splitlines()) and any("JSON records" in n for n in notes)


def test_dockers_pieces_of_a_long_line_are_joined_and_numbered_from_the_files_lines() -> None:
    data = _docker(LOG, split_at=40)  # every line over 40 characters is two records
    rc = analyze_bytes(data).root_cause
    assert rc is not None and rc.exception == "torch.OutOfMemoryError"
    assert rc.message.endswith("GPU 0 has a total capacity of 79.1 GiB")
    file_lines = data.decode().splitlines()
    assert "Traceback" in file_lines[rc.line_no - 1]


def test_a_record_with_escapes_and_a_line_that_is_no_record_are_read_as_text() -> None:
    data = _docker(["ValueError: bad value \"x\"\tand \u00e9\n"]) * 9 + b"plain line\n"
    assert json_key(data) == b"log"
    rc = analyze_bytes(data).root_cause
    assert rc is not None and rc.message == 'bad value "x"\tand \u00e9'


@pytest.mark.parametrize("data", [
    b'{"level": "info", "event": "server up"}\n' * 5,  # an app's structured log with no text field
    b"INFO 12-04 10:00:00 [x.py:1] {\"log\": \"quoted\"}\n" * 5,
    _docker(LOG[:2]),  # too few records to tell
], ids=["app-json", "quoted-json", "two-records"])
def test_other_text_is_not_taken_for_json_records(data: bytes) -> None:
    assert json_key(data) is None


def _cloud_export(lines: list[str]) -> bytes:
    """The Cloud Logging console's download (``gcloud logging read --format=json``): a pretty-printed array of
    entries, each over several lines, its text in ``textPayload`` (or none: an audit entry)."""
    entries: list[dict[str, object]] = [{"insertId": f"x{i}", "labels": {"instanceId": "00a1"},
                                         "textPayload": line.rstrip("\n"), "timestamp": f"2026-06-06T03:41:4{i}Z"}
                                        for i, line in enumerate(lines)]
    entries.insert(1, {"insertId": "y", "protoPayload": {"status": {"message": "Ready condition changed"}}})
    return json.dumps(entries, indent=2).encode()


def test_a_pretty_printed_export_is_read_as_the_log_its_entries_carry() -> None:
    """Only the entries' text fields give lines; the verdict is the log's, its line number the file line of the
    entry's ``textPayload``."""
    notes: list[str] = []
    data = _cloud_export(LOG)
    assert json_key(data[:4096]) is None and pretty_json_key(data) == b"textPayload"
    a = analyze_bytes(data, notes)
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "torch.OutOfMemoryError"
    assert rc.message.startswith("CUDA out of memory. Tried to allocate 2.00 GiB")
    file_lines = data.decode().splitlines()
    assert '"textPayload": "Traceback' in file_lines[rc.line_no - 1]
    assert a.lines == len(file_lines) and any("pretty-printed JSON" in n for n in notes)


@pytest.mark.parametrize("data", [
    json.dumps({"model": "x", "layers": [{"name": "a", "log": "off"}]}, indent=2).encode(),  # a config, one field
    json.dumps([{"prompt": f"p{i}", "output": "..."} for i in range(9)], indent=2).encode(),  # results: no text field
    b"[\n" + b"INFO 12-04 10:00:00 [x.py:1] plain text\n" * 9,  # a log whose first line is a bracket
], ids=["config", "results", "log"])
def test_other_json_is_not_taken_for_a_log_export(data: bytes) -> None:
    assert pretty_json_key(data) is None


def test_pythons_logging_as_json_is_read_with_its_level_and_logger() -> None:
    """A JSON formatter's records (python-json-logger, vLLM's logging config): ``LEVEL:logger:message``, as
    Python's default format, which the parser reads as a record of that level."""
    data = b"".join(b'{"levelname": "%s", "name": "vllm.engine", "message": "%s"}\n' % (level, msg) for level, msg in (
        (b"INFO", b"Starting vLLM API server"), (b"INFO", b"Loading weights took 3.2 seconds"),
        (b"ERROR", b"Engine core initialization failed.")))
    assert json_key(data) == b"message"
    notes: list[str] = []
    a = analyze_bytes(data, notes)
    assert any("Python's logging as JSON" in n for n in notes)
    assert a.root_cause is not None and (a.root_cause.process, a.root_cause.line_no) == ("main", 3)
