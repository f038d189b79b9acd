"""The command line and the lecture report: faces over the grading engine (``kbench``)."""
