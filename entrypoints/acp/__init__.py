"""``ironhive acp``: ironhive as an agent for editors over the Agent Client Protocol (official ``acp`` SDK)."""
