"""attnsweep's Python package, shipped with the project (no PyPI needed).

    attnsweep.trial    what a trial program needs to speak attnsweep's trial protocol
                       (docs/trainer.md, "The trial protocol"): report() a metric line,
                       save_attention() of a PyTorch model, should_stop() on SIGTERM.
                       Standard library only at import time.
    attnsweep.results  reading a results file through the schema it carries
                       (`attnsweep schema`): Results(path); needs h5py, pandas, yaml.
    attnsweep.analysis the parts of scripts/analyze.py (docs/plots.md); needs
                       matplotlib too, and the attnsweep binary for the report's numbers.

attnsweep puts this package's directory on the PYTHONPATH of every program it runs as a
trial; elsewhere add PREFIX/share/attnsweep/python (installed) or the source tree's
python/ to PYTHONPATH.
"""
