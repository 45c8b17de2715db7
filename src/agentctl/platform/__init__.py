"""Deployments: revisions uploaded by `agentctl deploy`, their secrets sealed at rest, and
every replica switching to the active one."""
