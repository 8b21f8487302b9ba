"""The service layer: how the CLI and the TUI read and change the history, one implementation per question.

Each module answers one concern (`runs`, `history`, `hosts`, `alerts`) with functions over the Context that
return frozen views (`runview.RunView`, `hosts.HostView`, `alerts.AlertView`); no ORM row leaves it. The
layering is enforced by import-linter (pyproject.toml): `orchestrator.cli` and `tui` reach the store only
through here. Nothing is imported here, so `import orchestrator.services.x` costs only what x needs.
"""
