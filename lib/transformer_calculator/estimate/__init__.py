"""The estimate beside a floor: each kernel on its own roof at a fraction of peak fitted
on measured runs, with the interval that held most of the runs like it."""
