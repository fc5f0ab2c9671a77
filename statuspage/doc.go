// Package statuspage is a status page for a redcron fleet, served by the
// service itself: New returns an http.Handler you mount next to /metrics,
// in every replica if you like, with no server of its own.
//
// The main page answers "is it running?" first, in a headline over
// everything: healthy; degraded, naming each node down, refused or warming
// up (with the instant it votes), each replica at fault (clock off, another
// job table), each job paused and each job's ticks recorded missed in the
// last hour; not running, when fewer nodes vote than a quorum (since when,
// as far as the nodes tell, and when it runs again, if warming nodes alone
// keep it from voting); or unknown, when no node could be read (then no
// part of the page shows none, empty or green).
//
// Below it: every job (this replica's and those the live replicas publish
// in their job tables: spec, time zone, next tick, pause, lock holder,
// last run), the ticks the replicas report skipped and why, the newest
// runs and missed ticks from the ledgers, the nodes (up, down, warming
// up, refused, restarted; latency; the last error), the live replicas
// (version, job table with the odd ones out marked, clock offset, last
// heartbeat) and the leaked locks of the last scan, by class. A name the
// nodes know (a ledger, a pause key, a lock) that no live replica
// publishes is no job: it is listed apart. Long replica names and fences
// are cut, whole on hover and on the job's page, which lists its history:
// runs, missed ticks with their reasons, and operators' actions. Both
// refresh themselves every few seconds, fetching a fragment of the page,
// with a few lines of plain script; without script they read the same,
// without refreshing.
//
// A fleet may run 100,000 jobs: the main page lists 100 of them a page,
// by name (?page=2, with links to the previous and next pages), those
// whose name, spec or a tag holds the text searched for, whatever its case
// (?q=report, with how many match); its live part refreshes the same page
// and search. It lists 100 of the names no live replica publishes, and
// says how many more match. The headline names 10 jobs paused and 10 with
// missed ticks, and counts the others. A view costs one filter and one
// sort over the names; it renders the rows shown alone, and reads the
// newest runs of the jobs shown alone (once per scan, shared by the
// views): the recent runs are theirs. The scan itself reads each live
// job's missed ticks of the last hour, for the headline: its cost grows
// with the jobs.
//
// It is read-only unless WithAuthorize gives a hook that lets a request
// act: then the pages offer to pause or resume a job (by its state) and
// trigger it, a search for a tag to pause, resume or trigger every job
// tagged with it (one after the other, stopping at the first failure),
// and to fix the leaks, as POSTs protected against cross-site
// requests (http.CrossOriginProtection), and to a request the hook refuses
// a sign-in link, to /login. Every action is logged (WithLogger) with
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
