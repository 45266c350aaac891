"""Context safety: token counting, tool-result cuts, observation masking, compaction and the token budget."""
