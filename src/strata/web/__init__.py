"""The web UI: static pages served at ``/`` that read the public REST API."""
