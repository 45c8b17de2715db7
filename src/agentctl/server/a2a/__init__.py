"""The deployed agent as an A2A peer, behind the official `a2a-sdk` server (the route is
`agentctl.server.routes.a2a`): the card, the executor, the ids and the task store."""
