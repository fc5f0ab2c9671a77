module github.com/redcron/redcron/bench

go 1.26.0

require (
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/redcron/redcron v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/redcron/redcron => ../
