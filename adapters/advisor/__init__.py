"""The ``advisor`` tool: the working model consults a stronger model about the conversation so far."""
