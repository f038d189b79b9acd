"""Batch grading: a model's folder of samples graded into the result store, resumably, on a local
process pool or a Dask cluster, with timing in one lane per machine. Imports the store and everything
below it; never a face (CLI, explorer)."""
