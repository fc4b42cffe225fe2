"""Reports of a study: text, Markdown, CSV and JSON (study.py), charts, one HTML page."""
