"""History compaction for hookagent: summaries validated before they are committed."""
