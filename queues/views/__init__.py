"""The site's pages: researchers (jobs, submit, queues) and platform management (manage/)."""
