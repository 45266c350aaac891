"""Tool invocation: the middleware pipeline, its guards and the approval gate."""
