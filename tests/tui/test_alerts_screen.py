"""The alerts screen shows how each recorded alert was delivered, per channel (orchestrator.alerts.outbox)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from textual.widgets import DataTable, Static

from orchestrator.store.models import Alert, AlertDelivery
from tui.screens.alerts import AlertsScreen


async def until(pilot, predicate, what: str, tries: int = 200) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class TestAlertsScreen:
    async def test_shows_each_channels_delivery(self, make_app, seeded, ctx) -> None:
        """A recorded alert shows its worst delivery state in the table and every channel's in its body."""
        with ctx.db() as s:
            alert = s.scalar(select(Alert))
            at = alert.created_at + timedelta(seconds=1)
            s.add_all([AlertDelivery(alert_id=alert.id, channel="json://127.0.0.1", channel_key="url:1", state="sent",
                                     attempts=1, created_at=at, last_attempt_at=at, sent_at=at),
                       AlertDelivery(alert_id=alert.id, channel="slack://…", channel_key="url:2", state="failed",
                                     attempts=4, last_error="the service did not accept the notification",
                                     created_at=at, last_attempt_at=at)])
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("a")
            screen = app.screen
            assert isinstance(screen, AlertsScreen)
            table = screen.query_one(DataTable)
            await until(pilot, lambda: table.row_count == 1, "the recorded alert")
            assert str(table.get_cell_at((0, 3))) == "failed"
            body = str(screen.query_one("#alerts-body", Static).content)
            assert "json://127.0.0.1 sent" in body
            assert "slack://… FAILED after 4 attempts: the service did not accept the notification" in body
