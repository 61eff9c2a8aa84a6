"""The ``dpadapt`` command line."""
