"""What the dashboard reads beyond the REST API: entry detail and provenance, beliefs and
skills, recall with the filters' exclusions, and (operator only) workers, leases, dead
letters and re-drive. Every function takes the request's :class:`~gateway.caller.Caller`
and reads through its Redis user, so Redis refuses what the token may not see."""
