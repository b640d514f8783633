"""dpspin-sql: differentially private semantic plans (DP-SPIN) over SQL.

store → atoms → assign → sketch → release → plan → decode → verify; see docs/ARCHITECTURE.md.
"""
__version__ = "0.1.0"
