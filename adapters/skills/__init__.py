"""Agent Skills on disk: the loader scanning the configured roots and the ``load_skill`` tool."""
