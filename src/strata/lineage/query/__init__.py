"""The read path: the Marquez REST API's answers, read from the model the record path keeps."""
