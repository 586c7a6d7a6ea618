"""Datasets: tuning logs and external measurements -> training examples."""
