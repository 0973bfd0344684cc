"""The write path: an OpenLineage event validated, queued, folded and applied to the model."""
