// Package ticket carries a trigger request's ticket (the admin command's
// trigger, placed on the nodes) from the front door, which finds it, to
// the scheduler's Trigger, which hands it to the Locker, through Trigger's
// context: taking requests is the front door's wiring, not part of the
// scheduler's API.
package ticket

import "context"

type key struct{}

// NewContext returns a copy of ctx that carries ticket.
func NewContext(ctx context.Context, ticket string) context.Context {
	return context.WithValue(ctx, key{}, ticket)
}

// FromContext returns the ticket ctx carries, or "".
func FromContext(ctx context.Context) string {
	t, _ := ctx.Value(key{}).(string)
	return t
}
