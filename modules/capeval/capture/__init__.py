"""CAPTURE (Dong et al. 2024)."""
