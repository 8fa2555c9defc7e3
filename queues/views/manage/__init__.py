"""Platform management pages: the everyday edits of platform admins (teams and memberships,
cohorts, queues with their quotas, service classes, flavors, clusters), each change recorded in
the audit history. Team admins may edit their own teams' memberships."""
