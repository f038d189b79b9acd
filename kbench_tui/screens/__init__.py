"""Screens of the explorer: main, matrix, editor, help."""
