package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/redcron/redcron/internal/leaks"
)

// replicaStatus is a live replica as its latest heartbeat describes it.
// An older replica's heartbeat says only when it was sent: its version and
// job table are "", its offset and start null.
type replicaStatus struct {
	Instance      string  `json:"instance"`
	Version       string  `json:"version"`
	JobTable      string  `json:"job_table"`         // digest of its jobs; "" if it publishes none
	TableDiffers  bool    `json:"job_table_differs"` // not the table most replicas publish
	OffsetMS      *int64  `json:"clock_offset_ms"`   // its clock minus the nodes'
	Started       *string `json:"started"`           // RFC 3339, UTC, ms
	LastBeatAgeMS *int64  `json:"last_beat_age_ms"`  // by this command's clock
}

// replicasOf returns the live replicas of rep, by instance id, with the job
// table most of them publish ("" when none does, or two tie for the most)
// and the number of distinct tables. Times a replica sent are taken back
// to the nodes' clock by its offset, so a replica whose clock is off shows
// its true age, if this command's clock is right.
func replicasOf(rep *leaks.Report, now time.Time) (out []replicaStatus, common string, tables int) {
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
	out = []replicaStatus{}
	for _, owner := range rep.Live { // sorted
		b := rep.Beats[owner]
		r := replicaStatus{Instance: owner, Version: b.Version, JobTable: b.JobTable}
		r.TableDiffers = len(byTable) > 1 && r.JobTable != "" && r.JobTable != common
		offset, known := b.Offset()
		if known {
			ms := offset.Milliseconds()
			r.OffsetMS = &ms
		}
		if sent := b.Sent(); !sent.IsZero() {
			age := now.Sub(sent.Add(-offset)).Milliseconds()
			r.LastBeatAgeMS = &age
		}
		if b.StartMS > 0 {
			at := time.UnixMilli(b.StartMS).Add(-offset).UTC().Format(acquiredLayout)
			r.Started = &at
		}
		out = append(out, r)
	}
	return out, common, len(byTable)
}

// writeReplicas prints the replicas' table: instance, version, job table
// (marked with * when it is not the most common), clock offset and the age
// of the last heartbeat.
func writeReplicas(w io.Writer, replicas []replicaStatus, common string, tables int) error {
	if len(replicas) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nREPLICA\tVERSION\tJOB TABLE\tCLOCK OFFSET\tLAST HEARTBEAT\n")
	for _, r := range replicas {
		version, table, offset, age := dash(printable(r.Version)), dash(printable(r.JobTable)), "-", "-"
		if r.TableDiffers {
			table += " *"
		}
		if r.OffsetMS != nil {
			offset = fmt.Sprintf("%+dms", *r.OffsetMS)
		}
		if r.LastBeatAgeMS != nil {
			age = short(time.Duration(*r.LastBeatAgeMS)*time.Millisecond) + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(r.Instance), version, table, offset, age)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if tables <= 1 {
		return nil
	}
	if common == "" {
		_, err := fmt.Fprintf(w, "* %d job tables among the replicas, none the most common: the replicas run different jobs\n", tables)
		return err
	}
	_, err := fmt.Fprintf(w, "* job table differs from the most common, %s (%d job tables among the replicas)\n", common, tables)
	return err
}

// dash is s, or "-" when s is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
