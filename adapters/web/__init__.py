"""The web tools (``web_search``, ``explore_site``, ``deep_research``) and their search backends, over aiohttp."""
