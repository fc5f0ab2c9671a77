package main

import (
	"testing"

	"github.com/redcron/redcron/bench/internal/locks"
)

// TestRoundOrder checks that every round measures each pair once and that
// each implementation's place, within its condition and in the round,
// changes from one round to the next, and takes every place within its
// condition over as many rounds as there are implementations.
func TestRoundOrder(t *testing.T) {
	for _, n := range []struct{ conds, impls int }{{5, 5}, {2, 4}, {1, 3}, {3, 1}, {5, 2}} {
		conds := allConditions[:n.conds]
		impls := locks.Impls[:n.impls]
		const rounds = 12
		// place[r][k] = (index within the condition's block, index in the round)
		place := make([]map[key][2]int, rounds)
		for r := range rounds {
			order := roundOrder(conds, impls, r)
			if len(order) != n.conds*n.impls {
				t.Fatalf("%v round %d: %d pairs, want %d", n, r, len(order), n.conds*n.impls)
			}
			place[r] = map[key][2]int{}
			within := map[string]int{}
			for i, k := range order {
				if _, dup := place[r][k]; dup {
					t.Fatalf("%v round %d: %v twice", n, r, k)
				}
				place[r][k] = [2]int{within[k.cond], i}
				within[k.cond]++
			}
		}
		for r := 1; r < rounds; r++ {
			for k, p := range place[r] {
				q := place[r-1][k]
				if n.impls > 1 && p[0] == q[0] {
					t.Errorf("%v: %v at place %d within its condition in rounds %d and %d", n, k, p[0], r-1, r)
				}
				if p[1] == q[1] {
					t.Errorf("%v: %v at place %d in rounds %d and %d", n, k, p[1], r-1, r)
				}
			}
		}
		for k := range place[0] {
			seen := map[int]bool{}
			for r := range n.impls {
				seen[place[r][k][0]] = true
			}
			if len(seen) != n.impls {
				t.Errorf("%v: %v took %d of %d places within its condition in %d rounds", n, k, len(seen), n.impls, n.impls)
			}
		}
	}
}
