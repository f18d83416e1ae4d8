"""Judge-quality reports, pure computations over stored scores: calibration of pass thresholds and
agreement with human labels (sources.py reads a run for them through any lister). Imports schemas and
errors; imported by api/quality.py, ui/ and tools/."""
