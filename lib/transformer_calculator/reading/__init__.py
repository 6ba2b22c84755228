"""Reading a published model: its config into a ``Model``, what is refused and why,
and what ``transformers`` itself knows of each family (the second route).
"""
