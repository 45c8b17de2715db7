"""What runs spend and do: token counts per model, the steps of a run, prices and budgets.

`ledger.Ledger` is filled while a run executes (`runtime/`), stored with the run when it ends
(`storage/`), summed by the API (`server/`) and shown by the console. `budgets` holds runs
to the limits of `[budgets]` and the operator's. This package imports nothing else of agentctl
but the errors and the project's model, so every layer may use it.
"""

from __future__ import annotations

from agentctl.metering.ledger import Ledger, Step, Tokens

__all__ = ["Ledger", "Step", "Tokens"]
