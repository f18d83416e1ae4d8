"""The run pages served at /ui: server-rendered Jinja2 templates, SVG charts drawn here, a signed session
for when API keys are on. Nothing to build or install in the browser."""
