package mutex

import (
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// startRecord returns the record an acquisition's commit writes to the
// lock's ledger; its text (recordText) is made only for a commit.
func (r *Redlock) startRecord(name string, lc lockConfig, fence uint64, start time.Time) engine.Record {
	return engine.Record{Job: name, Owner: lc.owner, Tick: lc.occurrence, Fence: fence, Start: start.UnixMilli(), Ticket: lc.ticket}
}

// recordText returns rec's text as the ledger stores it, "" with the
// ledger off.
func (r *Redlock) recordText(rec engine.Record) string {
	if r.cfg.ledgerCap == 0 {
		return ""
	}
	return rec.Text()
}

// ledgerWrite returns the ledger write that replaces the started record
// old by rec (either "" for none), scored by rec's occurrence or start.
func (r *Redlock) ledgerWrite(rec engine.Record, old, text string) engine.LedgerWrite {
	if r.cfg.ledgerCap == 0 || (old == "" && text == "") {
		return engine.LedgerWrite{}
	}
	score := rec.Tick
	if score == 0 {
		score = rec.Start
	}
	return engine.LedgerWrite{Old: old, New: text, Score: score, Cap: r.cfg.ledgerCap, Window: r.cfg.ledgerTime}
}

// endRecord returns the lock's final record: its started record with the
// holder's outcome (from its Release's context: internal/outcome; without
// one, the record says only when the lock was released) and the release's
// time.
func (l *Lock) endRecord() engine.LedgerWrite {
	if l.r.cfg.ledgerCap == 0 {
		return engine.LedgerWrite{}
	}
	l.mu.Lock()
	o := l.outcome
	l.mu.Unlock()
	rec := l.record
	rec.End = time.Now().UnixMilli()
	rec.Run, rec.Result, rec.Try, rec.Delay = o.Run, o.Result, o.Try, o.Delay.Milliseconds()
	if o.Err != nil {
		rec.Error = o.Err.Error()
	}
	return l.r.ledgerWrite(l.record, l.started, rec.Text())
}
