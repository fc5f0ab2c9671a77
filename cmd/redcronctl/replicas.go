package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/redcron/redcron/admin"
)

// replicaStatus is a live replica as its latest heartbeat describes it.
// An older replica's heartbeat says only when it was sent: its version and
// job table are "", its offset and start null.
type replicaStatus struct {
	Instance      string  `json:"instance"`
	Version       string  `json:"version"`
	JobTable      string  `json:"job_table"`         // digest of its jobs; "" if it publishes none
	TableDiffers  bool    `json:"job_table_differs"` // not the table most replicas publish
	SharesNoJob   bool    `json:"shares_no_job"`     // its table shares no job with the most replicas': another service's?
	OffsetMS      *int64  `json:"clock_offset_ms"`   // its clock minus the nodes'
	Started       *string `json:"started"`           // RFC 3339, UTC, ms
	LastBeatAgeMS *int64  `json:"last_beat_age_ms"`  // by this command's clock
}

// replicasOf returns the live replicas as status prints them; ages are
// measured from now, by this command's clock.
func replicasOf(replicas []admin.Replica, now time.Time) []replicaStatus {
	out := []replicaStatus{}
	for _, r := range replicas {
		rs := replicaStatus{Instance: r.Instance, Version: r.Version, JobTable: r.JobTable, TableDiffers: r.TableDiffers,
			SharesNoJob: r.SharesNoJob}
		if r.OffsetKnown {
			ms := r.Offset.Milliseconds()
			rs.OffsetMS = &ms
		}
		if !r.Sent.IsZero() {
			age := now.Sub(r.Sent).Milliseconds()
			rs.LastBeatAgeMS = &age
		}
		if !r.Started.IsZero() {
			at := r.Started.UTC().Format(acquiredLayout)
			rs.Started = &at
		}
		out = append(out, rs)
	}
	return out
}

// writeReplicas prints the replicas' table: instance, version, job table
// (marked with * when it is not the most common, ! when it shares no job
// with the most replicas'), clock offset and the age of the last
// heartbeat.
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
		if r.SharesNoJob {
			table += " !"
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
	if apart := slices.ContainsFunc(replicas, func(r replicaStatus) bool { return r.SharesNoJob }); apart {
		fmt.Fprintf(w, "! job table shares no job with the other replicas': another service under the same key prefix? "+
			"Give each service its own (mutex.WithKeyPrefix, -prefix)\n")
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
