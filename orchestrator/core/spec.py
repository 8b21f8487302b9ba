"""Job specs: the TOML a user passes to ``eorch launch --spec``, validated with pydantic (pure, no I/O but the read).

Two kinds, discriminated on ``kind``::

    kind = "command"                      kind = "eagle3-extract"
    [command]                             [eagle3]
    argv = ["python", "train.py"]         model = "/models/llama"
                                          data = "/data/prepared"      # or chat .jsonl / .parquet
                                          output = "/data/hs"

Unknown keys and bad values raise ``SpecError`` with one line naming the key, e.g.
``spec job.toml: eagle3.tensor_parallel_size: must be ≥ 1``.  The worker receives
``spec.model_dump(mode="json")`` and runs it with ``python3 -m worker.recipes.eagle3 spec.json``.
Default layer ids need the model's config.json, which lives on the host, so the recipe resolves them.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from orchestrator.errors import SpecError
from worker.recipes.eagle3_defaults import CONTROLLER_CANARY
from worker.recipes.eagle3_defaults import DEFAULTS as D

HsBackend = Literal["auto", "file", "fp8", "file-cpu"]
ServeEntrypoint = Literal["api_server", "cli"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env_vars(env: dict[str, str]) -> dict[str, str]:
    """Names a process environment can hold (no `=`, not empty), values without NUL bytes."""
    for key, value in env.items():
        if not _ENV_KEY.fullmatch(key):
            raise ValueError(f"{key!r} is not a variable name: use letters, digits and _ (like MY_VAR)")
        if "\x00" in value:
            raise ValueError(f"the value of {key} has a NUL byte")
    return env


def _no_nul(words: list[str]) -> list[str]:
    if any("\x00" in w for w in words):
        raise ValueError("an argument has a NUL byte")
    return words


class CommandSection(_Strict):
    """Any argv, run detached on the host."""

    argv: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None

    @field_validator("argv")
    @classmethod
    def _argv0(cls, argv: list[str]) -> list[str]:
        _non_blank(argv[0])
        return _no_nul(argv)

    @field_validator("env")
    @classmethod
    def _env(cls, env: dict[str, str]) -> dict[str, str]:
        return _env_vars(env)


class Eagle3Section(_Strict):
    """vLLM ``extract_hidden_states`` + ``speculators generate-offline-data``, run and verified on the host."""

    model: str
    data: str
    output: str
    layer_ids: list[Annotated[int, Field(ge=0)]] | None = D["layer_ids"]
    legacy_output_ids: list[Annotated[int, Field(ge=0)]] | None = D["legacy_output_ids"]
    tensor_parallel_size: int = Field(default=D["tensor_parallel_size"], ge=1)
    max_model_len: int = Field(default=D["max_model_len"], ge=16)
    gpu_memory_utilization: float = Field(default=D["gpu_memory_utilization"], gt=0.0, le=1.0)
    hs_backend: HsBackend = D["hs_backend"]
    staging_dir: str | None = D["staging_dir"]
    concurrency: int = Field(default=D["concurrency"], ge=1)
    port: int = Field(default=D["port"], ge=0, le=65535)  # 0: any free port on the host (runs sharing a host)
    trust_remote_code: bool = D["trust_remote_code"]
    vllm_args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    vllm_python: str = D["vllm_python"]
    speculators_python: str = D["speculators_python"]
    serve_entrypoint: ServeEntrypoint = D["serve_entrypoint"]
    max_samples: int | None = Field(default=D["max_samples"], ge=1)
    seq_length: int | None = Field(default=D["seq_length"], ge=16)
    health_timeout_s: float = Field(default=D["health_timeout_s"], gt=0)
    stop_grace_s: float = Field(default=D["stop_grace_s"], ge=0)
    gpu_release_timeout_s: float = Field(default=D["gpu_release_timeout_s"], ge=0)
    # the dataset split across runs (one per host): this run extracts rank's contiguous share of world_size
    world_size: int = Field(default=D["world_size"], ge=1)
    rank: int = Field(default=D["rank"], ge=0)
    request_timeout_s: float = Field(default=D["request_timeout_s"], gt=0)
    # uvicorn's line per request: noise in the server log of a million-sample extraction; phases come from steps
    server_access_log: bool = D["server_access_log"]
    # versions preflight requires of the interpreters: {"vllm": "0.33.0", "speculators": ">=0.9,<0.10"}
    expect_versions: dict[str, str] = Field(default_factory=dict)
    # first the same recipe on a shrunken copy of the model (worker/recipes/canary.py); the full run starts
    # only after it succeeded
    canary: bool = CONTROLLER_CANARY
    canary_samples: int = Field(default=D["canary_samples"], ge=1)
    # one real sample sent and its output checked (shape, dtype, token ids, finite) before the dataset
    first_sample_gate: bool = D["first_sample_gate"]
    # a client-side failure keeps the loaded server for `eorch retry` (worker/recipes/warmserver.py)
    keep_server: bool = D["keep_server"]
    keep_server_idle_s: float = Field(default=D["keep_server_idle_s"], gt=0)

    @field_validator("env")
    @classmethod
    def _env(cls, env: dict[str, str]) -> dict[str, str]:
        return _env_vars(env)

    @field_validator("vllm_args")
    @classmethod
    def _args(cls, args: list[str]) -> list[str]:
        return _no_nul(args)

    @field_validator("model", "data", "output", "vllm_python", "speculators_python")
    @classmethod
    def _paths(cls, value: str) -> str:
        return _non_blank(value)

    @field_validator("layer_ids", "legacy_output_ids")
    @classmethod
    def _ids(cls, ids: list[int] | None) -> list[int] | None:
        if ids is None:
            return None
        if not ids:
            raise ValueError("must not be empty (leave it out for the default [2, n//2, n-3, n])")
        if len(set(ids)) != len(ids):
            raise ValueError("must not repeat an id")
        if ids != sorted(ids):
            raise ValueError("must be in increasing order")
        return ids

    @field_validator("vllm_args")
    @classmethod
    def _no_owned_flags(cls, args: list[str]) -> list[str]:
        owned = {"--speculative-config", "--speculative_config", "--kv-transfer-config", "--kv_transfer_config",
                 "--port", "--model"}
        for arg in args:
            if arg.split("=", 1)[0] in owned:
                raise ValueError(f"{arg.split('=', 1)[0]} is set by the recipe; use the spec key instead")
        return args

    @model_validator(mode="after")
    def _one_id_source(self) -> Eagle3Section:
        if self.layer_ids is not None and self.legacy_output_ids is not None:
            raise ValueError("give layer_ids or legacy_output_ids, not both")
        if self.rank >= self.world_size:
            raise ValueError(f"rank {self.rank} must be < world_size {self.world_size}")
        return self


class CommandJob(_Strict):
    kind: Literal["command"]
    name: str | None = None
    command: CommandSection


class Eagle3Job(_Strict):
    kind: Literal["eagle3-extract"]
    name: str | None = None
    eagle3: Eagle3Section


JobSpec = Annotated[CommandJob | Eagle3Job, Field(discriminator="kind")]
_ADAPTER: TypeAdapter[CommandJob | Eagle3Job] = TypeAdapter(JobSpec)
KINDS = ("command", "eagle3-extract")


def _message(err: dict[str, Any]) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    if kind == "greater_than_equal":
        return f"must be ≥ {ctx['ge']}"
    if kind == "greater_than":
        return f"must be > {ctx['gt']}"
    if kind == "less_than_equal":
        return f"must be ≤ {ctx['le']}"
    if kind == "too_short":
        return "must not be empty"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return f"must be one of {', '.join(repr(k) for k in KINDS)}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')}"
    text = str(err["msg"])
    return text.removeprefix("Value error, ")


def _location(loc: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in KINDS:  # the discriminated union's tag is not a key the user wrote
        parts = parts[1:]
    return ".".join(parts) or "kind"


def parse_spec(data: dict[str, Any], source: str = "spec") -> CommandJob | Eagle3Job:
    """Validates an already-parsed mapping; errors name ``source`` and the first bad key."""
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = _location(first["loc"])
        if first["type"] == "union_tag_not_found":
            loc = "kind"
        raise SpecError(f"spec {source}: {loc}: {_message(dict(first))}") from None


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """``--set KEY.PATH=VALUE`` items set into a parsed spec; VALUE is a TOML value (``8001``, ``true``,
    ``["--x"]``, ``"text"``), anything else is taken as a string.  Validation afterwards names bad keys."""
    out = copy.deepcopy(data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        parts = key.strip().split(".")
        if not sep or not all(parts):
            raise SpecError(f"--set {item!r}: expected KEY=VALUE, e.g. --set eagle3.port=8001")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        node = out
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise SpecError(f"--set {key.strip()}: {part} is a value, not a table")
            node = child
        node[parts[-1]] = value
    return out


def load_spec(path: str | Path, overrides: Sequence[str] = ()) -> CommandJob | Eagle3Job:
    """Reads and validates a TOML job spec (with ``--set`` overrides); raises ``SpecError`` naming the file and
    key."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"spec {path}: file not found") from None
    except OSError as exc:
        raise SpecError(f"spec {path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"spec {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"spec {path.name}: not valid TOML: {exc}") from None
    return parse_spec(apply_overrides(data, overrides), source=path.name)


def worker_payload(spec: CommandJob | Eagle3Job) -> dict[str, Any]:
    """The JSON the remote recipe reads (``RUN_DIR/spec.json``)."""
    return spec.model_dump(mode="json")
