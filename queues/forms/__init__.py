"""Django forms of the site's pages: submission (submit.py) and platform management (manage.py)."""
