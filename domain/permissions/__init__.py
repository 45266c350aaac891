"""The permission engine: rules, path and shell-command judgement, the built-in defaults."""
