"""What code a run ran, as the few lines `eorch show`, `eorch host check --env` and the TUI's run header print."""

from __future__ import annotations

from typing import Any


def env_lines(record: dict[str, Any]) -> list[str]:
    """What code a run ran (its environment fingerprint and patch set), as a few lines with rich markup.

    Shared by `eorch show`, `eorch host check --env` and the TUI's run header. Packages that are not
    installed are left out rather than printed as "None". Every value from the host is escaped: a version,
    a path or a probe error with brackets is printed as it was, never read as markup.
    """
    from rich.markup import escape

    def e(value: object) -> str:
        return escape(str(value))

    fp = record.get("env_fingerprint")
    ps = record.get("patch_set")
    lines: list[str] = []
    if fp:
        # Versions live under "versions"; the headline ones are also at the top level of a fingerprint.
        v = {**{k: fp.get(k) for k in ("torch", "vllm", "speculators")}, **(fp.get("versions") or {})}
        torch = fp.get("torch_probe") or {}
        parts = [f"Python {e(fp.get('python'))}"]
        if v.get("torch"):
            parts.append(f"torch {e(v['torch'])}" + (f" (CUDA {e(torch['cuda'])})" if torch.get("cuda") else ""))
        if v.get("vllm"):
            dist = fp.get("vllm_dist")
            parts.append(f"vllm {e(v['vllm'])}" + (f" ({e(dist)})" if dist not in (None, "vllm") else ""))
        parts += [f"{name} {e(v[name])}" for name in ("speculators", "transformers", "hs-connectors",
                                                       "compressed-tensors") if v.get(name)]
        if fp.get("error"):
            parts.append(f"probe failed: {e(fp['error'])}")
        lines.append("env: " + " · ".join(parts))
        gpus = fp.get("gpus") or []
        if fp.get("hostname"):
            lines.append(f"machine: {e(fp['hostname'])} · boot {e(str(fp.get('boot_id'))[:8])} · "
                         + (f"{len(gpus)}× {e(gpus[0])} · driver {e(fp.get('driver'))}" if gpus else "no GPUs"))
        patched = fp.get("patched_files") or {}
        drifted = [p for p, f in patched.items() if f.get("expected") and f.get("sha256") != f["expected"]]
        if patched:
            sets = ", ".join(e(s) for s in fp.get("patch_sets") or []) or "—"
            lines.append(f"patched files: {len(patched)} (sets: {sets})"
                         + (f" · [bold red]not as patched: {e(', '.join(drifted))}[/]" if drifted else ""))
    if ps:
        lines.append(f"patch set: {e(ps['name'])} ({len(ps.get('files', {}))} files, verified "
                     f"{e(ps.get('verified_at'))})")
        if ps.get("changed_since"):
            lines.append(f"[bold red]patched files changed since this run[/] (seen {e(ps['changed_since']['at'])}): "
                         + e(", ".join(ps["changed_since"]["files"])))
    return lines
