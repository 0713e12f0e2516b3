"""The plan-mode plugin (hooks land with the kernel seams)."""
