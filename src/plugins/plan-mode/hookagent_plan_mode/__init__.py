"""Plan mode for hookagent."""
