"""Results as data: the asv environment, machine identity, and the export of stored results."""
