"""Judge-quality reports, pure computations over stored scores: calibration of pass thresholds and
agreement with human labels (sources.py reads a run for them). Imports schemas; imported by api/quality.py
and tools/."""
