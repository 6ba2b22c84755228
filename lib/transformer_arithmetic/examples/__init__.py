"""The book's stated examples: the simulated sentence and its tables (with how they were
made), and what the page "Past one accelerator" chooses beyond the book's example.
"""
