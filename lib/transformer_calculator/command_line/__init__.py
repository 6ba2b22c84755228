"""The command line and the report: ``report``, ``train`` and ``plan``, their shared
options, the report's dictionary and its plain-text table.
"""
