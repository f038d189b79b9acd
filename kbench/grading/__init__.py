"""Grading: the evaluation pipeline, the truth it judges against (secret inputs, reference outputs)
and the static gate. Imports core, sandbox and timing; never a face (CLI, report, explorer)."""
