"""Judge quality: calibration of pass thresholds, agreement with human marks, answer-order controls."""
