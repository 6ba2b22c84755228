"""Runs on this computer that the pages set beside the formulas: real collectives over
gloo, splits and training steps run for real, a plain PyTorch decoder built as the
independent reference, and timed loops of the measured page.
"""
