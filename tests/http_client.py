"""One HTTP client for the suite's repeated requests.

``httpx.get`` and ``httpx.post`` build a client, and its TLS context, for each call:
about 25 ms of CPU, which a test sending hundreds of events paid again and again on two
busy cores. This client is built once. It keeps no connection alive between requests:
the suite's servers come and go (some killed on purpose), and a later one may listen on
a port an earlier one had.
"""

from __future__ import annotations

import httpx

HTTP = httpx.Client(timeout=30, limits=httpx.Limits(max_keepalive_connections=0))
