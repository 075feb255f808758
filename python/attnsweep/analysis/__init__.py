"""The parts of scripts/analyze.py (docs/plots.md), one module per section:

    common    the words and labels, opening and checking the results file, the sweep's
              goal and parameters, and the numbers `attnsweep report --format json`
              computes (report_numbers: ranking, Pareto front, hypervolume)
    plots     history, parallel coordinates, slices; groups, colours, figure helpers
    training  learning curves, invariant traces, CP role weights
    fronts    pareto.png (per-panel 2-D fronts), objectives.png (the report's front)
    probes    the probes of `attnsweep probe`

Only common is imported before the input has been checked; the others import
matplotlib (Agg) and pandas.
"""
