"""Agent Skills (``SKILL.md``): front matter, the specification's validation, selection, the metadata block."""
