"""What the server does with runs, threads, crons and assistants, whoever asks: the HTTP
routes, MCP, A2A and the thread-stream protocol all call these, never each other."""
