"""The kbench explorer: a Textual app over the headless ``kbench`` engine.

Browse the candidate library, evaluate live (step events stream into a log), toggle input
distributions and watch verdicts and fast_p move. All grading is the engine's; this package only
schedules evaluations on a background thread and draws what comes back.
"""
