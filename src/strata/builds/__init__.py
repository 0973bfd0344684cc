"""The build service: declared PySpark transforms, versioned programs, staleness and builds."""
