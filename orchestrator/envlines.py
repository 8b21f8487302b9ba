"""What code a run ran, as the few lines `eorch show`, `eorch host check --env` and the TUI's run header print."""

from __future__ import annotations

from typing import Any


def env_lines(record: dict[str, Any]) -> list[str]:
    """What code a run ran (its environment fingerprint and patch set), as a few lines with rich markup.

    Shared by `eorch show`, `eorch host check --env` and the TUI's run header. Packages that are not
    installed are left out rather than printed as "None".
    """
    fp = record.get("env_fingerprint")
    ps = record.get("patch_set")
    lines: list[str] = []
    if fp:
        # Versions live under "versions"; the headline ones are also at the top level of a fingerprint.
        v = {**{k: fp.get(k) for k in ("torch", "vllm", "speculators")}, **(fp.get("versions") or {})}
        torch = fp.get("torch_probe") or {}
        parts = [f"Python {fp.get('python')}"]
        if v.get("torch"):
            parts.append(f"torch {v['torch']}" + (f" (CUDA {torch['cuda']})" if torch.get("cuda") else ""))
        if v.get("vllm"):
            dist = fp.get("vllm_dist")
            parts.append(f"vllm {v['vllm']}" + (f" ({dist})" if dist not in (None, "vllm") else ""))
        parts += [f"{name} {v[name]}" for name in ("speculators", "transformers", "hs-connectors",
                                                    "compressed-tensors") if v.get(name)]
        if fp.get("error"):
            parts.append(f"probe failed: {fp['error']}")
        lines.append("env: " + " · ".join(parts))
        gpus = fp.get("gpus") or []
        if fp.get("hostname"):
            lines.append(f"machine: {fp['hostname']} · boot {str(fp.get('boot_id'))[:8]} · "
                         + (f"{len(gpus)}× {gpus[0]} · driver {fp.get('driver')}" if gpus else "no GPUs"))
        patched = fp.get("patched_files") or {}
        drifted = [p for p, f in patched.items() if f.get("expected") and f.get("sha256") != f["expected"]]
        if patched:
            lines.append(f"patched files: {len(patched)} (sets: {', '.join(fp.get('patch_sets') or []) or '—'})"
                         + (f" · [bold red]not as patched: {', '.join(drifted)}[/]" if drifted else ""))
    if ps:
        lines.append(f"patch set: {ps['name']} ({len(ps.get('files', {}))} files, verified {ps.get('verified_at')})")
        if ps.get("changed_since"):
            lines.append(f"[bold red]patched files changed since this run[/] (seen {ps['changed_since']['at']}): "
                         + ", ".join(ps["changed_since"]["files"]))
    return lines
