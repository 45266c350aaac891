"""Permission sources: the project permission file and the gitignore-style path matcher."""
