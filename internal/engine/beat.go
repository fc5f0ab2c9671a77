package engine

import (
	"encoding/json"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// BeatFormat is the format of the heartbeat documents the library writes.
// Fields are only ever added to it, never renamed or given a new meaning,
// and readers ignore the fields they do not know; a document of another
// format is read as a heartbeat without details.
const BeatFormat = 1

// Beat is what a replica's heartbeat key (Keyspace.Heartbeat) holds: a
// small JSON document, written every heartbeat interval by every replica on
// every node, so kept short. Older replicas wrote the send time alone, in
// unix milliseconds: ParseBeat reads that as a Beat without details.
type Beat struct {
	Format   int    `json:"v"`              // BeatFormat; 0 for a value without details
	Instance string `json:"id"`             // the replica's instance id, the owner of its locks
	Version  string `json:"ver,omitempty"`  // the replica's build: its main module's version
	JobTable string `json:"jobs,omitempty"` // digest of its job table; "" if it publishes none
	// OffsetMS is the replica's clock minus the nodes', in ms, as its last
	// heartbeat measured it; nil before the first measure.
	OffsetMS *int64 `json:"off_ms,omitempty"`
	StartMS  int64  `json:"start_ms,omitempty"` // when the replica started, unix ms by its clock
	SentMS   int64  `json:"sent_ms"`            // when the heartbeat was sent, unix ms by its clock
	// Skips are the replica's recent skips of ticks that may have run
	// nowhere (not held or already_run), for the missed-tick check.
	Skips []BeatSkip `json:"skips,omitempty"`
}

// BeatSkip is a tick a replica skipped, and why (the scheduler's skip
// reason).
type BeatSkip struct {
	Job    string `json:"j"`
	Tick   int64  `json:"t"` // unix ms
	Reason string `json:"r"`
}

// String encodes b as the heartbeat key holds it.
func (b Beat) String() string {
	data, _ := json.Marshal(b) // a struct of strings and numbers always encodes
	return string(data)
}

// Details reports whether b says more than that its replica is live: its
// version, job table and clock offset.
func (b Beat) Details() bool { return b.Format == BeatFormat }

// Sent returns when the heartbeat was sent, by the replica's clock; zero if
// unknown.
func (b Beat) Sent() time.Time {
	if b.SentMS <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(b.SentMS)
}

// Offset returns the clock offset the beat carries, and whether it carries
// one.
func (b Beat) Offset() (time.Duration, bool) {
	if b.OffsetMS == nil {
		return 0, false
	}
	return time.Duration(*b.OffsetMS) * time.Millisecond, true
}

// ParseBeat reads a heartbeat key's value. A document of BeatFormat gives
// its details; an older replica's plain number gives only the send time;
// anything else gives a Beat without details. A heartbeat key means a live
// replica whatever it holds: ParseBeat never fails.
func ParseBeat(value string) Beat {
	if ms, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err == nil {
		return Beat{SentMS: ms}
	}
	var b Beat
	if err := json.Unmarshal([]byte(value), &b); err != nil || b.Format != BeatFormat {
		return Beat{}
	}
	return b
}

// MainVersion returns the version of the running program's main module, as
// its build info records it, or "(devel)" when it records none.
func MainVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
