"""Running transforms: the builder's walk, one run per transform, its inputs, its lineage events."""
