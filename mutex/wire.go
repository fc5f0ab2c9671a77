package mutex

import "github.com/redcron/redcron/internal/lockwire"

// wire fills w with what redcron's own packages need of r (see
// internal/lockwire): Flush does, when its context carries w.
func (r *Redlock) wire(w *lockwire.Redlock) {
	*w = lockwire.Redlock{Nodes: append(w.Nodes[:0:0], r.nodes...), KeyPrefix: r.keys.Prefix(), MaxTTL: r.cfg.maxTTL,
		MaxHold: r.cfg.maxHold, LedgerRecords: r.cfg.ledgerCap, LedgerWindow: r.cfg.ledgerTime, LogNodes: r.logNodes, Check: r.check}
}
