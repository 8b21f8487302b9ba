"""What a line of a Python traceback is: a header, a chain marker, a frame line (its indentation kept or lost), an
exception line; and when a chained exception tells the same trouble as the first one, at more length.  Pure
text predicates, shared by the traceback assembler (``tracebacks``) and the line rules (``rules``)."""

from __future__ import annotations

import re

HEADERS = ("Traceback (most recent call last):", "Exception Group Traceback (most recent call last):")
CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
EXC_RE = re.compile(r"^(?P<exc>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$")
#: An exception line that can stand without its header: a (dotted) name that says it is an error, the base
#: ``Exception`` itself (vLLM's ``Exception: WorkerProc initialization failed ...``), or a class of a module of
#: exceptions, with its message (``requests.exceptions.ConnectTimeout: ...``).
BARE_EXC_RE = re.compile(r"^(?:(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception)|Exception)(?::\s?.*)?"
                         r"|(?:[A-Za-z_]\w*\.)*(?:exceptions|errors)\.[A-Z]\w*: .*)$")
#: Python logging's level names: ``ERROR:root:...`` (its default format) is a log record, not an exception line.
LEVELS = frozenset({"DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL"})
PYDANTIC_LOC_RE = re.compile(r"^[\w.\[\]\-]+$")
PYDANTIC_ITEM_RE = re.compile(r"^(?:Value error, |Assertion failed, |Input should |Field required|For further "
                               r"information visit https://errors\.pydantic\.dev)|\[type=\w+")
#: A frame line whose indentation was lost (a paste rendered as text: Markdown, a chat message, a web page).
FRAME_RE = re.compile(r'^File "[^"]*", line \d+|^[~^]+$')  # a caret line marks a part of the source line
#: A source line whose statement goes on over the next lines: it ends open (a bracket, a comma) or stands for
#: lines left out (``...<7 lines>...``); open brackets are counted too (``brackets``).
STATEMENT_GOES_ON = re.compile(r"[(\[{,]$|^\.\.\.<\d+ lines>\.\.\.$")
#: A line that stands for frames left out of a paste (``....``, ``…``, ``[...]``): not an exception line.
ELISION_RE = re.compile(r"^[\[(<]?(?:\.{3,}|…+)[\])>]?$")
#: Names of exceptions that may stand with no message (``KeyboardInterrupt``, ``StopIteration``).
BARE_NAMES = ("Error", "Exception", "Interrupt", "Exit", "Iteration")
QUOTED_RE = re.compile(r"'([^'\s]{3,})'")


def brackets(code: str) -> int:
    """Brackets a source line opens, less those it closes."""
    return sum(map(code.count, "([{")) - sum(map(code.count, ")]}"))


#: rich's traceback (``rich.traceback.install()``, typer's default): a box whose top rule holds the header
#: (``╭──── Traceback (most recent call last) ────╮``), its frames inside (``│ ... │``), the exception after it.
RICH_HEADER = "─ Traceback (most recent call last) ─"


def is_header(message: str) -> bool:
    return message.startswith(HEADERS) or message.rstrip().endswith(HEADERS) or is_rich_header(message)


def is_cut_header(message: str) -> bool:
    """Whether ``message`` ends in the start of a traceback's header, cut short (``... Traceback (most``)."""
    at = message.rfind("Traceback (")
    rest = message[at:].rstrip()
    return at >= 0 and len(rest) < len(HEADERS[0]) and HEADERS[0].startswith(rest)


def is_rich_header(message: str) -> bool:
    return message.startswith("╭") and RICH_HEADER in message


def is_bare_exception(message: str) -> bool:
    """``ValueError: ...`` standing alone: the exception line of a traceback whose header was cut off."""
    return BARE_EXC_RE.match(message.rstrip()) is not None


#: A frame line that ends just after its source file's path (a CSV export that split the line at its first comma,
#: a paste cut there).  (One cut inside its path is a fragment: ``tbfacts``.)
_FRAME_CUT_AT_PATH = re.compile(r'^File "[^"]*(?:\.py|>)"$')


def is_cut_frame_line(message: str) -> bool:
    """A frame's ``File "..."`` line that ends just after its path."""
    return _FRAME_CUT_AT_PATH.match(message) is not None


def is_frame_line(message: str) -> bool:
    """A frame's ``File "...", line N`` line or a caret line, at column 0 (its indentation lost)."""
    return FRAME_RE.match(message) is not None


def exception_like(message: str) -> bool:
    """Whether a line may be an exception line rather than a frame's source line: a (dotted) class name
    (capitalised: ``inner: T = f()`` is an annotated assignment) with a message after its colon, or a name
    that says it is an exception (``KeyboardInterrupt``)."""
    m = EXC_RE.match(message)
    if m is None:
        return False
    name = m.group("exc")
    return name.endswith(BARE_NAMES) or (bool(m.group("msg")) and name.rpartition(".")[2][:1].isupper())


def never_exception_line(message: str) -> bool:
    """Whether Python never writes ``message`` as an exception line: a name and a colon with no blank after it
    (``py:1140] Model loading ...``: the rest of a line another overwrote in a terminal's copy)."""
    m = EXC_RE.match(message)
    return m is not None and m.group("msg") is not None and message[len(m.group("exc")) + 1:][:1] not in ("", " ")


def translates(first: str, later: str) -> bool:
    """Whether ``later`` (an exception chained after the one that said ``first``) tells the same trouble at more
    length: it names what ``first`` quoted (a key, a module, an attribute) and says at least twice as much.  A
    wrapper naming the same thing in fewer words ("Failed to load model 'x'") tells less than its cause."""
    return len(later) >= 2 * len(first) and any(name in later for name in QUOTED_RE.findall(first))
