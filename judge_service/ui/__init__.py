"""The run pages served at /ui: page routes (pages.py), sign-in (signin.py), view models (views.py), SVG
charts drawn here (charts.py), rendering with security headers and CSRF (render.py), Jinja2 templates
(templates/). Nothing to build or install in the browser. Imports api/ (deps, auth), the service, quality/
and schemas; imported by app.py only."""
