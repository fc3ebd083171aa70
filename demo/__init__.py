"""Demo data for the platform, made on this machine from the Python standard library's documentation."""
