"""A published model's parts: its layout layer by layer (mixers, feed-forward parts,
running summaries), what each holds and costs, and the weight matrices a quantizer
packs.
"""
