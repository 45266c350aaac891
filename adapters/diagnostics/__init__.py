"""Diagnostics: the checks and fixes of ``ironhive doctor`` and the release check and upgrade of ``ironhive update``."""
