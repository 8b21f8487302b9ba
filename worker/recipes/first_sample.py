"""The first-sample gate (run with the speculators env's python, in the warm python): one real sample sent to the
healthy server and its output opened and checked before the dataset is released::

    python -m worker.recipes.first_sample DATA OUT --index I --endpoint URL --model M --layers L --result FILE

Sends row ``I``'s ``input_ids`` as a ``/v1/completions`` prompt (``max_tokens=1``, ``return_token_ids``: what
``speculators generate-offline-data`` sends), waits for the writer's ``.lock``, opens the file and checks:
``hidden_states`` shape ``[T, L, hidden]`` with ``T = len(input_ids)`` and ``hidden`` = the model's
``hidden_size``; a floating dtype (the model's, or fp8 with scales); ``token_ids`` = the input ids (and the
server's ``prompt_token_ids`` too); every value finite.  A good sample is moved to ``OUT/hs_I.safetensors``,
where the extraction then skips it.  Writes ``{"ok", "index", "checks": {...}, "errors": [...], ...}``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

DTYPES = {"bfloat16": "torch.bfloat16", "float16": "torch.float16", "float32": "torch.float32"}


def served_dtype(vllm_args: list[str]) -> str | None:
    """The ``--dtype`` the server was started with (None for vLLM's ``auto``/none given)."""
    for i, arg in enumerate(vllm_args):
        value = arg.split("=", 1)[1] if arg.startswith("--dtype=") else (
            vllm_args[i + 1] if arg == "--dtype" and i + 1 < len(vllm_args) else None)
        if value is not None:
            return {"half": "float16", "float": "float32"}.get(value, value) if value != "auto" else None
    return None


def argv(cfg: dict[str, Any], python: str, model: str, data: str, out: str, index: int, layers: int,
         result: str) -> list[str]:
    """The gate's command, for the recipe's warm python (argv[1:3] == ["-m", MODULE])."""
    dtype = served_dtype(list(cfg.get("vllm_args") or []))
    return [python, "-m", "worker.recipes.first_sample", data, out, "--index", str(index),
            "--endpoint", f"http://127.0.0.1:{cfg['port']}/v1", "--model", model, "--layers", str(layers),
            "--timeout", str(cfg.get("request_timeout_s", 600)), "--result", result,
            *(["--dtype", dtype] if dtype else [])]


def _post(url: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return dict(json.loads(resp.read()))


def _wait_lock(lock: Path, timeout: float) -> None:
    if not lock.exists():
        return
    fd = os.open(lock, os.O_RDWR)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the writer still holds {lock} after {timeout}s") from None
                time.sleep(0.005)
    finally:
        os.close(fd)
    lock.unlink(missing_ok=True)


def model_facts(model: str) -> tuple[int | None, str | None]:
    """hidden_size and dtype name from the model's config.json (or its text_config)."""
    try:
        cfg = json.loads((Path(model) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    scope = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    hidden = scope.get("hidden_size") if isinstance(scope.get("hidden_size"), int) else None
    return hidden, str(scope.get("torch_dtype") or scope.get("dtype") or cfg.get("torch_dtype") or "") or None


def check(path: Path, ids: list[int], layers: int, hidden: int | None, dtype: str | None) -> dict[str, Any]:
    """The checks of one output file; ``errors`` lists what failed, one line each."""
    import torch
    from safetensors import safe_open

    errors: list[str] = []
    with safe_open(str(path), framework="pt") as f:
        keys = set(f.keys())
        if not {"hidden_states", "token_ids"} <= keys:
            return {"errors": [f"keys {sorted(keys)}; want hidden_states and token_ids"]}
        hs = f.get_tensor("hidden_states")
        token_ids = f.get_tensor("token_ids").tolist()
        scales = f.get_tensor("hidden_states_scales") if "hidden_states_scales" in keys else None
    shape = list(hs.shape)
    want = [len(ids), layers, hidden if hidden is not None else (shape[2] if len(shape) == 3 else None)]
    if shape != want:
        errors.append(f"hidden_states shape {shape}; want [T={len(ids)}, len(layer_ids)={layers}, hidden={want[2]}]"
                      + (" (fewer tokens than the prompt: prefix caching on?)" if shape and shape[0] < len(ids) else ""))
    fp8 = "float8" in str(hs.dtype)
    expected = DTYPES.get(dtype or "")
    if not hs.dtype.is_floating_point:
        errors.append(f"hidden_states dtype {hs.dtype} is not floating point")
    elif fp8 and scales is None:
        errors.append(f"hidden_states dtype {hs.dtype} without hidden_states_scales")
    elif not fp8 and expected and str(hs.dtype) != expected:
        errors.append(f"hidden_states dtype {hs.dtype}; the model's is {expected}")
    if token_ids != ids:
        first = next((i for i, (a, b) in enumerate(zip(token_ids, ids, strict=False)) if a != b),
                     min(len(token_ids), len(ids)))
        errors.append(f"token_ids differ from the input ids at position {first} "
                      f"({len(token_ids)} saved, {len(ids)} sent)")
    values = hs.float() * scales.float() if fp8 and scales is not None else hs.float()
    finite = bool(torch.isfinite(values).all())
    if not finite:
        errors.append(f"{int((~torch.isfinite(values)).sum())} non-finite values in hidden_states")
    return {"shape": shape, "dtype": str(hs.dtype), "tokens": len(token_ids), "finite": finite,
            "token_ids_match": token_ids == ids, "errors": errors}


def gate(data: str, out: Path, index: int, endpoint: str, model: str, layers: int, timeout: float,
         dtype: str | None = None) -> dict[str, Any]:
    from datasets import load_from_disk

    t0 = time.monotonic()
    ids = [int(x) for x in load_from_disk(data).with_format(None)[index]["input_ids"]]
    result: dict[str, Any] = {"ok": False, "index": index, "prompt_tokens": len(ids)}
    try:
        resp = _post(f"{endpoint}/completions", {"model": model, "prompt": ids, "max_tokens": 1,
                                                 "return_token_ids": True}, timeout)
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", "replace")[:400]
        return {**result, "errors": [f"the server answered HTTP {exc.code}: {body}"]}
    except (urllib.error.URLError, OSError) as exc:
        return {**result, "errors": [f"request failed: {exc}"]}
    choice = (resp.get("choices") or [{}])[0]
    params = resp.get("kv_transfer_params") or {}
    path = params.get("hidden_states_path") or params.get("handle")
    if not path:
        return {**result, "errors": [f"response without kv_transfer_params.hidden_states_path: {sorted(resp)}"]}
    staged = Path(path)
    _wait_lock(Path(path + ".lock"), timeout)
    hidden, model_dtype = model_facts(model)
    checks = check(staged, ids, layers, hidden, dtype or (model_dtype if model_dtype != "float32" else None))
    if choice.get("prompt_token_ids") is not None and choice["prompt_token_ids"] != ids:
        checks["errors"].append("the server's prompt_token_ids differ from the input ids")
    result.update(checks=checks, errors=checks.pop("errors"), file=str(staged))
    if not result["errors"]:
        final = out / f"hs_{index}.safetensors"
        shutil.move(str(staged), final)
        result.update(ok=True, file=str(final))
    result["seconds"] = round(time.monotonic() - t0, 3)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="first_sample")
    p.add_argument("data")
    p.add_argument("out", type=Path)
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--endpoint", required=True, help="http://127.0.0.1:PORT/v1")
    p.add_argument("--model", required=True)
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--dtype", help="the served dtype (vLLM --dtype); default: the model's bf16/fp16")
    p.add_argument("--result", type=Path, required=True)
    a = p.parse_args(argv)
    result = gate(a.data, a.out, a.index, a.endpoint, a.model, a.layers, a.timeout, a.dtype)
    text = json.dumps(result)
    sys.stdout.write(text + "\n")
    tmp = a.result.with_name(a.result.name + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(a.result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
