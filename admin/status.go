package admin

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
)

// defaultMaxTTL is the max lock TTL of mutex.New: a node whose server
// started less than this ago is warming up.
const defaultMaxTTL = time.Minute

// Status is the fleet as one scan of its nodes shows it.
type Status struct {
	KeyPrefix string
	Quorum    int           // nodes a majority is: len(Nodes)/2+1
	Scanned   int           // keys read, over the nodes scanned
	Took      time.Duration // how long the scan took
	Jobs      []Job         // every job a live replica publishes or the nodes hold a key of, by name
	Replicas  []Replica     // the replicas with a live heartbeat, by instance id
	// CommonTable is the job table most live replicas publish ("" for
	// none, or two as common); Tables is the number of distinct ones.
	CommonTable string
	Tables      int
	// Unknown are the live replicas whose job table could not be read (an
	// older release publishes none): their jobs may be any.
	Unknown []string
	Nodes   []Node // in the order given to New
	// Leaks are the copies of every name one of whose copies leaked, by
	// name and then in the nodes' order; a copy without Classes is a live
	// lock's, beside a leftover of the same name.
	Leaks []Leak
}

// Job is one job as the nodes and the live replicas' job tables show it.
type Job struct {
	Name string
	// Spec, Zone and Next are its spec, the zone it is read in and its
	// next tick, from the job table the most live replicas publish among
	// those listing it; empty when none does.
	Spec, Zone string
	Next       time.Time
	// Tags are its tags (scheduler.WithTags), sorted, from the same table;
	// Tagged selects jobs by them.
	Tags []string
	// Limit and Permits are its cluster limit (scheduler.WithClusterLimit)
	// from the same table, "" and 0 for none, and PermitsHeld how many of
	// the limit's permits hold on a quorum of the nodes now, by any job
	// sharing it. The permits' own locks (Limit#i) are not listed as jobs.
	Limit                string
	Permits, PermitsHeld int
	// Publishers is how many live replicas list it in their job table;
	// Phantom says none does, while every live replica's table was read:
	// a leftover of a job gone, or one not deployed yet.
	Publishers int
	Phantom    bool
	PausedOn   int       // nodes with its pause key: in effect on a quorum
	Holder     string    // the owner of the value holding its lock on the most nodes
	Tick       time.Time // the tick that value claims; zero for a manual run
	HeldOn     int       // nodes with that value; 0 when the lock is free
	LastRun    *Record   // its ledger's newest run or missed tick; nil for none
	// Done says it is a one-time job ("@at t") whose tick ran, as its
	// ledger shows: it runs no more. False when runs were not read.
	Done bool
}

// Replica is a live replica as its latest heartbeat describes it. An
// older release's heartbeat says only when it was sent: its version and
// job table are "", its offset and start unknown.
type Replica struct {
	Instance string
	Version  string // its build: its main module's version, or leakscan.WithReplicaInfo's
	JobTable string // a digest of its jobs, their specs and options; "" if it publishes none
	// TableDiffers says its table is not CommonTable (a deploy in
	// progress, or a replica missing a job); SharesNoJob that it shares
	// no job with the tables of the most replicas (another service under
	// the same key prefix?).
	TableDiffers, SharesNoJob bool
	Offset                    time.Duration // its clock minus the nodes', when OffsetKnown
	OffsetKnown               bool
	// Started and Sent are when it started and sent its latest
	// heartbeat, by the nodes' clock; zero when unknown.
	Started, Sent time.Time
	// Skips are the ticks it reported skipped lately that may have run
	// nowhere: State "skipped", Result the reason (paused, no_quorum...).
	Skips []Record
}

// Node is one node as Status found it.
type Node struct {
	Name string
	// State is "up", "down" (no answer), "warming_up" (its server started
	// less than Options.MaxTTL ago: its vote does not count yet, unless
	// the fleet trusts its nodes) or "refused" (it answers, but refuses
	// us: a password, an ACL, a server loading).
	State string
	// Latency is of an INFO round trip (of a PING when INFO failed and it
	// answered); Uptime is since its server started, when INFO told.
	Latency, Uptime time.Duration
	Err             error // INFO's error; nil when it answered
	ScanErr         error // the scan's error; nil when its keys were read
}

// Status scans the nodes (SCAN, never KEYS, read only) and returns the
// fleet's jobs with their last runs, its live replicas, its nodes' health
// and its leaks (see Options.NoLastRun). A node that cannot be scanned has its ScanErr, and is
// counted as if it held a copy of every lock and a heartbeat of every
// owner, so that no live lock is taken for a leak. Its error says that no
// node could be scanned; the nodes' health is returned then too.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	warm, runs := c.opts.MaxTTL, 1
	if warm == 0 {
		warm = defaultMaxTTL
	}
	if c.opts.NoLastRun {
		runs = 0
	}
	st, err := c.cl.Status(ctx, runs, warm)
	return publicStatus(c, st), err
}

// publicStatus returns st as Status shows it.
func publicStatus(c *Client, st *cluster.Status) *Status {
	rep := st.Report
	out := &Status{KeyPrefix: rep.Prefix, Quorum: c.cl.Quorum(), Scanned: rep.Scanned, Took: rep.Took, CommonTable: st.Common,
		Tables: st.Tables, Jobs: []Job{}, Replicas: []Replica{}, Leaks: leaksOf(rep)}
	if st.Published != nil {
		out.Unknown = st.Published.Unread()
	}
	for _, j := range st.Jobs {
		pj := Job{Name: j.Name, Spec: j.Spec, Zone: j.Zone, Next: j.Next, Tags: j.Tags, Limit: j.Limit, Permits: j.Permits,
			PermitsHeld: j.PermitsHeld, Publishers: j.Publishers, Phantom: j.Phantom,
			PausedOn: j.PausedOn, Holder: j.Holder, Tick: j.Tick, HeldOn: j.HeldOn, Done: j.Done}
		if len(j.Runs) > 0 {
			r := recordOf(j.Runs[0])
			pj.LastRun = &r
		}
		out.Jobs = append(out.Jobs, pj)
	}
	for _, r := range st.Replicas {
		pr := Replica{Instance: r.Instance, Version: r.Version, JobTable: r.JobTable, TableDiffers: r.TableDiffers,
			SharesNoJob: r.SharesNoJob, Offset: r.Offset, OffsetKnown: r.OffsetKnown, Started: r.Started, Sent: r.Sent}
		for _, sk := range rep.Beats[r.Instance].Skips {
			pr.Skips = append(pr.Skips, Record{Job: sk.Job, State: stateSkipped, Result: sk.Reason, Owner: r.Instance, Tick: msTime(sk.Tick)})
		}
		out.Replicas = append(out.Replicas, pr)
	}
	scanErr := map[string]error{}
	for _, e := range rep.Errors {
		if ee := (*engine.Error)(nil); errors.As(e, &ee) {
			scanErr[ee.Node] = e
		}
	}
	for i, n := range c.cl.Nodes {
		pn := Node{Name: n.Name(), State: cluster.NodeDown, ScanErr: scanErr[n.Name()]}
		if i < len(st.Nodes) {
			h := st.Nodes[i]
			pn.State, pn.Latency, pn.Uptime, pn.Err = h.State(), h.Latency, h.Uptime, h.Err
		}
		out.Nodes = append(out.Nodes, pn)
	}
	return out
}

// leaksOf returns the copies of the leaked findings of rep.
func leaksOf(rep *leaks.Report) []Leak {
	out := []Leak{}
	for _, f := range rep.Leaks() {
		for _, cp := range f.Copies {
			l := Leak{Name: f.Name, Kind: f.Kind, Node: cp.Node, Key: cp.Key, Type: cp.Type, Value: cp.Value, TTL: cp.TTL,
				Owner: cp.Owner, Acquired: cp.Acquired, Classes: []string{}}
			for _, k := range cp.Classes {
				l.Classes = append(l.Classes, k.String())
			}
			out = append(out, l)
		}
	}
	return out
}

// classOf returns the class called name, and whether there is one.
func classOf(name string) (leaks.Class, bool) {
	all := leaks.AllClasses()
	i := slices.IndexFunc(all[:], func(c leaks.Class) bool { return c.String() == name })
	if i < 0 {
		return 0, false
	}
	return all[i], true
}
