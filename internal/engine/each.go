package engine

import "sync"

// OnEach calls f with every node and its index, all in parallel, and
// returns their errors in the nodes' order.
func OnEach(nodes []*Node, f func(i int, n *Node) error) []error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = f(i, n) })
	}
	wg.Wait()
	return errs
}

// Answered returns how many of errs are nil: the nodes that did what was
// asked, of a call to OnEach.
func Answered(errs []error) int {
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
}
