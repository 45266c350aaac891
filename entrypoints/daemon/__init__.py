"""The warm path: a per-user preloaded process that forks one child per ``ironhive`` run."""
