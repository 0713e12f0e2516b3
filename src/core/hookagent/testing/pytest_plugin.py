"""The ``hookagent`` pytest plugin (entry point ``pytest11``); fixtures arrive with the agent."""
