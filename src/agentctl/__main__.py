from agentctl.cli import main

main()
