"""``gpuplatform``: the researchers' command line over the REST API (README "Command line").

Standard library (urllib) and PyYAML only: it never imports Django or the server's packages, so
it runs on a laptop that has only the package installed. Modules: ``config`` (server and token),
``client`` (HTTP and its errors, with the exit codes), ``output`` (what each command prints),
``commands`` (one function per command), ``main`` (the argument parser and ``main()``).
"""
