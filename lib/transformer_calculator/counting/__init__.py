"""Counting over a layout: number formats, the bytes a model stores, the memory and work
of inference and of a training step, its time on a chip, and a run's money and energy.
"""
