"""attnsweep's Python side: ``attnsweep.results`` reads results files through the schema
each one carries (``attnsweep schema``)."""
