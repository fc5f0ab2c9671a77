// Package statuspage is a status page for a redcron fleet, served by the
// service itself: a Page is an http.Handler you mount next to /metrics,
// in every replica if you like, with no server of its own.
//
// The main page shows every job (its spec, time zone and next tick from
// this replica's scheduler, whether it is paused, who holds its lock, its
// last run), the newest runs and missed ticks of all jobs from their
// ledgers, the nodes (up, down, warming up, refused, restarted; latency;
// the last error), the live replicas (version, job table with the odd ones
// out marked, clock offset, last heartbeat) and the leaked locks of the
// last scan, by class. A job's page lists its history: runs, missed ticks
// with their reasons, and operators' actions. Both refresh themselves
// every few seconds, fetching a fragment of the page, with a few lines of
// plain script; without script they read the same, without refreshing.
//
// It is read-only unless WithAuthorize gives a hook that lets a request
// act: then the pages offer to pause, resume and trigger a job and to fix
// the leaks, as POSTs protected against cross-site requests
// (http.CrossOriginProtection). Every action is logged (WithLogger) with
// who did it and recorded in the job's ledger, as the admin command's are.
//
// It reads the nodes of the Redlock it is given: each page view scans
// them (SCAN, as the leak scan does) at most once every 2 s, shared by
// every viewer, and each read is bounded by 2 s. Node names are shown as
// host:port, and the nodes' passwords (as the clients' options hold them)
// are taken out of every error text shown.
//
// Mount it under a prefix with http.StripPrefix; its links are relative:
//
//	mux.Handle("/redcron/", http.StripPrefix("/redcron", page))
package statuspage
