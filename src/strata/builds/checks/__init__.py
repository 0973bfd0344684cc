"""Data checks: declared expectations, and judging them on what a run reads or writes."""
