package store_test

import (
	"context"
	"testing"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/store"
)

func TestFencedSet(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, 1).Node(0).Client(t)
	for _, step := range []struct {
		fence uint64
		value string
		want  bool
	}{{10, "a", true}, {9, "stale", false}, {10, "same", false}, {11, "b", true}} {
		ok, err := store.FencedSet(ctx, c, "data", step.fence, step.value)
		if err != nil || ok != step.want {
			t.Fatalf("FencedSet(%d, %q) = %v, %v; want %v", step.fence, step.value, ok, err, step.want)
		}
	}
	v, f, err := store.FencedGet(ctx, c, "data")
	if err != nil || v != "b" || f != 11 {
		t.Fatalf("FencedGet = %q, %d, %v", v, f, err)
	}
	if _, err := store.FencedSet(ctx, c, "data", 0, "x"); err == nil {
		t.Error("fence 0 accepted")
	}
}
