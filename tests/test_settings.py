"""Reading settings from the environment."""

from __future__ import annotations

import logging

import pytest

from agentctl import settings
from agentctl.errors import SettingsError
from agentctl.settings import Settings


def test_max_runs_defaults_to_hundreds_and_reads_its_former_name(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "_warned", set())
    assert Settings.from_env({}).max_runs == 256
    assert Settings.from_env({"AGENTCTL_MAX_RUNS": "40"}).max_runs == 40
    assert Settings.from_env({}, max_runs=3).max_runs == 3  # `--max-runs`
    with caplog.at_level(logging.WARNING, logger="agentctl.settings"):
        assert Settings.from_env({"AGENTCTL_WORKERS": "8"}).max_runs == 8
        assert Settings.from_env({"AGENTCTL_WORKERS": "8"}).max_runs == 8
        both = {"AGENTCTL_WORKERS": "8", "AGENTCTL_MAX_RUNS": "30"}
        assert Settings.from_env(both).max_runs == 30
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == ["AGENTCTL_WORKERS is deprecated: set AGENTCTL_MAX_RUNS instead"]


def test_the_loop_lag_limit_is_turned_off_with_zero_and_refuses_negatives() -> None:
    assert Settings.from_env({}).max_loop_lag_ms == 10.0
    assert Settings.from_env({"AGENTCTL_MAX_LOOP_LAG_MS": "0"}).max_loop_lag_ms == 0
    assert Settings.from_env({"AGENTCTL_MAX_LOOP_LAG_MS": "2.5"}).max_loop_lag_ms == 2.5
    with pytest.raises(SettingsError, match="LOOP_LAG_MS: must be 0 or greater"):
        Settings.from_env({"AGENTCTL_MAX_LOOP_LAG_MS": "-1"})
    with pytest.raises(SettingsError, match="AGENTCTL_PORT: must be 0 or greater"):
        Settings.from_env({"AGENTCTL_PORT": "-1"})
    with pytest.raises(SettingsError, match="MAX_RUNS: must be greater than 0"):
        Settings.from_env({"AGENTCTL_MAX_RUNS": "0"})


def test_a_number_that_is_not_finite_is_refused() -> None:
    # NaN compares false with everything: a cost budget of NaN would hold nobody.
    for raw in ("nan", "inf", "-inf"):
        with pytest.raises(SettingsError, match="USER_COST_PER_DAY: expected a finite number"):
            Settings.from_env({"AGENTCTL_BUDGET_USER_COST_PER_DAY": raw})
        with pytest.raises(SettingsError, match="LEASE_SECONDS: expected a finite number"):
            Settings.from_env({"AGENTCTL_LEASE_SECONDS": raw})
    budget = {"AGENTCTL_BUDGET_USER_COST_PER_DAY": "2.5"}
    assert Settings.from_env(budget).budget_user_cost_per_day == 2.5
