package cluster

import (
	"time"

	"github.com/redcron/redcron/internal/leaks"
)

// Replica is a live replica as its latest heartbeat describes it. An older
// replica's heartbeat says only when it was sent: its version and job
// table are "", its offset and start unknown.
type Replica struct {
	Instance     string
	Version      string
	JobTable     string // digest of its jobs; "" if it publishes none
	TableDiffers bool   // not the table most replicas publish
	// SharesNoJob: its job table shares no job with the tables of the most
	// live replicas (Tables.Apart): another service's replica under the
	// same key prefix? Set by Status.
	SharesNoJob bool
	// Offset is its clock minus the nodes', when OffsetKnown.
	Offset      time.Duration
	OffsetKnown bool
	// Started and Sent are when it started and when it sent its latest
	// heartbeat, taken back to the nodes' clock by its offset; zero when
	// unknown.
	Started, Sent time.Time
}

// Replicas returns the live replicas of rep, by instance id, with the job
// table most of them publish ("" when none does, or two tie for the most)
// and the number of distinct tables. Times a replica sent are taken back
// to the nodes' clock by its offset, so a replica whose clock is off shows
// its true age.
func Replicas(rep *leaks.Report) (out []Replica, common string, tables int) {
	byTable := rep.JobTables()
	most := 0
	for digest, owners := range byTable {
		switch {
		case len(owners) > most:
			common, most = digest, len(owners)
		case len(owners) == most:
			common = "" // a tie: no table is the most common
		}
	}
	out = []Replica{}
	for _, owner := range rep.Live { // sorted
		b := rep.Beats[owner]
		r := Replica{Instance: owner, Version: b.Version, JobTable: b.JobTable}
		r.TableDiffers = len(byTable) > 1 && r.JobTable != "" && r.JobTable != common
		r.Offset, r.OffsetKnown = b.Offset()
		if sent := b.Sent(); !sent.IsZero() {
			r.Sent = sent.Add(-r.Offset)
		}
		if b.StartMS > 0 {
			r.Started = time.UnixMilli(b.StartMS).Add(-r.Offset)
		}
		out = append(out, r)
	}
	return out, common, len(byTable)
}
