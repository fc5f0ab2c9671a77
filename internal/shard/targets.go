package shard

import (
	"cmp"
	"hash/fnv"
	"slices"
)

// targets returns, for each shard, the replica of fleet that is to hold
// it: rendezvous hashing of the instance ids with the shard, bounded so
// that no replica is given more than its fair part (Count / len(fleet),
// rounded up). Each shard, in order, goes to the first by rank of the
// replicas with room left, so that every replica seeing the same fleet
// computes the same targets, and a replica that comes or goes moves few
// shards besides its own.
func targets(fleet []string) [Count]string {
	var out [Count]string
	if len(fleet) == 0 {
		return out
	}
	room := map[string]int{}
	for _, inst := range fleet {
		room[inst] = (Count + len(fleet) - 1) / len(fleet)
	}
	ranked := slices.Clone(fleet)
	score := make(map[string]uint64, len(fleet))
	for s := range Count {
		for _, inst := range fleet {
			h := fnv.New64a()
			h.Write([]byte(inst))
			h.Write([]byte{0, byte(s)})
			score[inst] = mix(h.Sum64())
		}
		slices.SortFunc(ranked, func(a, b string) int { return cmp.Compare(score[b], score[a]) })
		for _, inst := range ranked {
			if room[inst] > 0 {
				room[inst]--
				out[s] = inst
				break
			}
		}
	}
	return out
}

// mix scrambles a hash's bits (splitmix64's finalizer), so that close
// inputs rank independently.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
