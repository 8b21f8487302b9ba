"""The pure core: what eorch decides, with no I/O (no SQLite, SSH, Textual or files of the history).

Run states and their order (`runstate`), how fresh a status is (`freshness`), remote commands as argv
(`commands`), job specs (`spec`), launch requests (`launchrequest`), destinations (`destination`), what a
similar run is (`history`), the notices the monitor announces (`notices`), words and colours for people
(`humanize`, `envlines`, `recipesteps`), and the few rules the monitor applies to a run's records
(`eventbudget`, `canary`, `secretenv`). import-linter (pyproject.toml) keeps it free of I/O libraries; the log
parser (`orchestrator.logparse`), the alert rules and the monitor's decision are pure too, in their packages.
"""
