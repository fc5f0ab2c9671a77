// Package leaks scans redcron's nodes for leaked locks, classifies them and
// fixes them by compare-and-delete. Package leakscan runs it on a schedule
// in every replica; the admin command runs it on demand.
package leaks
