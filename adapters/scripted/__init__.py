"""ScriptedChatClient: a real ChatClient that plays back scripted steps."""
