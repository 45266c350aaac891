"""In-process local inference through llama-cpp-python."""
