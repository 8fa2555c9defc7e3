"""gunicorn's settings for every way the web server runs (Dockerfile, docker-compose.yml,
deploy/kubernetes, benchmarks/live_e2e.py): gunicorn reads ./gunicorn.conf.py from its working
directory (/app in the image); each command line still gives the address and the workers.

Threaded workers with keep-alive instead of the sync worker: a sync worker answers
``Connection: close`` (a new TCP connection for every API call) and sits idle while its request
waits for PostgreSQL or Redis; with two threads a worker serves a second request meanwhile.
Measured on 2 cores (BENCHMARKS.md, "Live end to end", issue 27): 2,000 POSTs from 4 clients
on 2 workers, 27 -> 33 jobs/s and p50 134 -> 104 ms against the sync worker, same code.
For the sync worker, say ``--worker-class sync --threads 1`` (with more than one thread gunicorn
runs gthread whatever the class says).
"""

worker_class = "gthread"
threads = 2
keepalive = 5  # seconds an idle client connection stays open (gunicorn's default: 2)
