"""Alerts: the pure rules (`rules`), the engine that records and raises them (`engine`), the outbox of
deliveries (`outbox`: pure states; rows in orchestrator.store.outbox), the channels that send them (`channels`)
and the TUI's settings view (`settings`). Nothing is imported here: `orchestrator.alerts.rules` stays pure.
"""
