"""What eorch does to a host and its runs: launch (checked or not, from a spec), rerun, cancel, patch sets,
tool jobs (engine setup, legacy conversion) and the warm server's retry requests. Each writes the history
through the store; the CLI and the TUI reach them through ``orchestrator.services``."""
