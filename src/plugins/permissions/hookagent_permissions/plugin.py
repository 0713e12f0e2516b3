"""The ``permissions`` plugin (entry point ``hookagent_permissions.plugin``).

The hooks land with the kernel's harness seams; until then the rule engine is used directly.
"""
